# wheel.cmake: the project laid out as the Python wheel (DFTRACE_PYTHON_WHEEL, set by the build
# backend cmake/pep517/dftrace_backend.py, which also puts the package, lib/ and bin/ under one
# install folder). A wheel holds no symbolic links and is unpacked anywhere, so:
# - every library the loader asks for is one file under the name it asks for: libdftrace under
#   its soname (what the extension's DT_NEEDED names), each plug-in under the unversioned name
#   libdftrace loads it by and `dftrace run` preloads;
# - each object finds the package's own libdftrace through an $ORIGIN RPATH, written as DT_RPATH
#   so that LD_LIBRARY_PATH (another libdftrace, say in /usr/local/lib) does not come first.
if(NOT TARGET dftrace_python OR NOT TARGET dftrace_cli)
  message(FATAL_ERROR "dftrace: the wheel needs the Python face (Python 3 development files) "
                      "and the dftrace command (DFTRACE_BUILD_TOOLS)")
endif()
set_target_properties(dftrace PROPERTIES VERSION ${PROJECT_VERSION_MAJOR})
foreach(t dftrace_io dftrace_mpi dftrace_cupti)
  if(TARGET ${t})
    set_property(TARGET ${t} PROPERTY VERSION)
    set_property(TARGET ${t} PROPERTY SOVERSION)
    set_property(TARGET ${t} PROPERTY INSTALL_RPATH "$ORIGIN")
  endif()
endforeach()
foreach(t dftrace_python dftrace_io dftrace_mpi dftrace_cupti)
  if(TARGET ${t})
    target_link_options(${t} PRIVATE -Wl,--disable-new-dtags)
  endif()
endforeach()
