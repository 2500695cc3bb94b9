# embed.cmake - write a file's bytes into a C source as a NUL-terminated array.
#   cmake -DIN=<file> -DOUT=<file.c> -DNAME=<symbol> -P embed.cmake
# defines `const char NAME[]` (the bytes and a NUL) and `const size_t NAME_len` (without it).
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE ${OUT} "/* Generated from ${IN} by cmake/embed.cmake: do not edit. */\n"
	"#include <stddef.h>\n"
	"extern const char ${NAME}[];\n"
	"extern const size_t ${NAME}_len;\n"
	"const char ${NAME}[] = {\n${bytes}0x00};\n"
	"const size_t ${NAME}_len = sizeof(${NAME}) - 1;\n")
