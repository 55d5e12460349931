# install_tree.cmake: `cmake --install` of the build tree into a test's own prefix, without
# touching the build tree's install_manifest*.txt (the user's record of what THEY installed).
#
#   cmake -DBUILD_DIR=<build> -DPREFIX=<prefix> -DWORK=<scratch dir> [-DCOMPONENT=<name>]
#         -P tests/cmake/install_tree.cmake
#
# `cmake --install` runs <build>/cmake_install.cmake, which ends by writing the manifest into
# the build tree. This runs the same script from a copy whose manifest goes to WORK instead
# (the subdirectories' scripts, which it includes by absolute path, write no manifest).
foreach(v BUILD_DIR PREFIX WORK)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "install_tree.cmake: -D${v}=... is required")
  endif()
endforeach()
file(READ "${BUILD_DIR}/cmake_install.cmake" script)
set(manifest_in_build "\"${BUILD_DIR}/\${CMAKE_INSTALL_MANIFEST}\"")
string(FIND "${script}" "${manifest_in_build}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "install_tree.cmake: ${BUILD_DIR}/cmake_install.cmake does not write its "
                      "manifest where this CMake version is expected to; not installing")
endif()
string(REPLACE "${manifest_in_build}" "\"${WORK}/\${CMAKE_INSTALL_MANIFEST}\"" script "${script}")
file(MAKE_DIRECTORY "${WORK}")
file(WRITE "${WORK}/cmake_install.cmake" "${script}")
set(CMAKE_INSTALL_PREFIX "${PREFIX}")
if(DEFINED COMPONENT)
  set(CMAKE_INSTALL_COMPONENT "${COMPONENT}")
endif()
include("${WORK}/cmake_install.cmake")
