# layers.cmake - landlord's layers as build targets that may only use the layers below them.
#
# landlord_layer(<name> DIR <dir> [USES <layer|layer/header.h>...] [LIBS <target>...])
#
# Builds every <dir>/*.c into the static library landlord_<name>, linked PUBLIC against the
# libraries of the layers it USES and against LIBS. Before the library compiles, check_layer.cmake
# reads each source's and header's `#include "x/y.h"` lines and fails the build when one names a
# layer (or a header of a layer) that is not in USES. An entry "kube/quantity.h" admits that one
# header and nothing else of its layer. So the include graph, and with it the call graph, can
# only point downwards; docs/architecture.md draws the result.
set(LANDLORD_LAYER_CHECKER ${CMAKE_CURRENT_LIST_DIR}/check_layer.cmake)

function(landlord_layer name)
	cmake_parse_arguments(L "" "DIR" "USES;LIBS" ${ARGN})
	file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${L_DIR}/*.c)
	file(GLOB headers CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${L_DIR}/*.h)
	set(link_layers "")
	foreach(use ${L_USES})
		string(REGEX REPLACE "/.*" "" layer ${use})
		list(APPEND link_layers landlord_${layer})
	endforeach()
	list(REMOVE_DUPLICATES link_layers)

	set(stamp ${CMAKE_CURRENT_BINARY_DIR}/layers/${name}.checked)
	# Lists travel as "|"-separated strings: a ";" would split the command line.
	string(REPLACE ";" "|" uses_arg "${L_USES}")
	string(REPLACE ";" "|" files_arg "${sources};${headers}")
	add_custom_command(OUTPUT ${stamp}
		COMMAND ${CMAKE_COMMAND} -DLAYER=${name} -DUSES=${uses_arg} -DFILES=${files_arg}
			-DSTAMP=${stamp} -P ${LANDLORD_LAYER_CHECKER}
		DEPENDS ${sources} ${headers} ${LANDLORD_LAYER_CHECKER}
		COMMENT "Checking the includes of layer ${name}" VERBATIM)
	add_custom_target(landlord_${name}_layer_check DEPENDS ${stamp})

	add_library(landlord_${name} STATIC ${sources})
	add_dependencies(landlord_${name} landlord_${name}_layer_check)
	get_filename_component(root ${CMAKE_SOURCE_DIR}/${L_DIR} DIRECTORY)
	target_include_directories(landlord_${name} PUBLIC ${root})
	target_link_libraries(landlord_${name} PUBLIC ${link_layers} ${L_LIBS})
endfunction()
