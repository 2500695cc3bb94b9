# check_layer.cmake - run by landlord_layer() (layers.cmake) before a layer compiles:
#   cmake -DLAYER=kube -DUSES=base|http -DFILES=a.c|a.h -DSTAMP=out -P check_layer.cmake
# Every `#include "<layer>/<header>"` of FILES must name LAYER itself, a layer in USES, or a
# header listed in USES as "<layer>/<header>". A library layer (under lib/) must also not name
# the landlord.dev API group: lib/ is a Kubernetes library, and src/api owns landlord's names.
string(REPLACE "|" ";" USES "${USES}")
string(REPLACE "|" ";" FILES "${FILES}")
set(errors "")
foreach(file ${FILES})
	file(STRINGS ${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
	foreach(line ${includes})
		string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]*)\".*" "\\1" inc "${line}")
		if(NOT inc MATCHES "/")
			continue() # a header beside the file (none today); the compiler finds it or fails
		endif()
		string(REGEX REPLACE "/.*" "" layer "${inc}")
		if(layer STREQUAL LAYER)
			continue()
		endif()
		list(FIND USES ${layer} by_layer)
		list(FIND USES ${inc} by_header)
		if(by_layer EQUAL -1 AND by_header EQUAL -1)
			set(allowed "${USES}")
			if(NOT allowed)
				set(allowed "no other layer")
			endif()
			string(APPEND errors "  ${file}: includes \"${inc}\", but layer ${LAYER} may "
				"use only: ${allowed}\n")
		endif()
	endforeach()
	if(file MATCHES "/lib/[^/]+/[^/]+$")
		file(STRINGS ${file} group_names REGEX "landlord\\.dev")
		if(group_names)
			string(APPEND errors "  ${file}: names the landlord.dev API group; lib/ may not "
				"(move the name to src/api/api.h)\n")
		endif()
	endif()
endforeach()
if(errors)
	message(FATAL_ERROR "layering violated (see docs/architecture.md):\n${errors}")
endif()
file(WRITE ${STAMP} "ok\n")
