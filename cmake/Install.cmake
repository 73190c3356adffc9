# Install rules and the Debian package (CPack).
#
#   PREFIX/bin/terasim
#   PREFIX/share/terasim/{models,topologies,sim,tools}/data/   what the binary reads at run time,
#                                                              in the source tree's layout
#   PREFIX/share/doc/terasim/                                  README.md, docs/, traces/README.md
#
# The binary finds its data at ../share/terasim beside itself (TERASIM_DATA_FROM_BIN, set on
# models/ where DataRoot() lives), so an installed tree can be moved as a whole.
include(GNUInstallDirs)

# `cmake --install` and `cpack` take what is built (build the `terasim` target first) rather
# than building `all` first, which holds every test binary.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

set(TERASIM_DATA_INSTALL_DIR ${CMAKE_INSTALL_DATADIR}/terasim)
file(RELATIVE_PATH TERASIM_DATA_FROM_BIN ${CMAKE_INSTALL_FULL_BINDIR}
     ${CMAKE_INSTALL_FULL_DATADIR}/terasim)
target_compile_definitions(terasim_models PRIVATE
                           TERASIM_DATA_FROM_BIN="${TERASIM_DATA_FROM_BIN}")

# Libraries found outside the system folders (the CUDA toolkit's) stay findable once installed.
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH ON)
set_target_properties(terasim terasim-full PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)

# terasim hands exec / calibrate / validate / sweep to terasim-full beside it.
install(TARGETS terasim terasim-full RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(dir models/data topologies/data sim/data tools/data)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${TERASIM_DATA_INSTALL_DIR}/${dir})
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs
        FILES_MATCHING PATTERN "*.md")
install(FILES ${PROJECT_SOURCE_DIR}/traces/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}/traces)

# `cpack -G DEB` in the build folder: terasim_VERSION_ARCH.deb for `apt install ./terasim_*.deb`.
# The dependencies are Debian 12's packages for what this build links dynamically.
set(deps "libc6, libstdc++6, libgcc-s1")
if(NOT Boost_USE_STATIC_LIBS)
  string(APPEND deps ", libboost-program-options${Boost_VERSION_MAJOR}.${Boost_VERSION_MINOR}.0")
endif()
string(APPEND deps ", libfmt${fmt_VERSION_MAJOR}")
if(NOT TERASIM_STATIC)
  string(APPEND deps ", libsqlite3-0, libopenblas0")
endif()
if(TERASIM_HAVE_MPI)
  string(APPEND deps ", libopenmpi3")
endif()
# CPack prepends the summary and formats the paragraphs as debian/control wants them.
set(description "terasim replays token-level (TeraPipe), micro-batch (GPipe, 1F1B, \
interleaved) and operator-parallel (Megatron) training schedules over a modelled GPU cluster \
and runs the same schedules for real to check the prediction. `terasim compare` ranks every \
strategy family for a model on a cluster.")
if(TARGET terasim_exec_cuda)
  string(APPEND description "\n\nThis build holds the CUDA back end: it needs the CUDA 13 \
runtime and cuBLAS (and NCCL) on the library path, which no Debian package provides. Configure \
with -DTERASIM_WITH_CUDA=OFF for a package that needs Debian's libraries only.")
endif()

set(CPACK_PACKAGE_NAME terasim)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "terasim maintainers <terasim@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "which parallel strategy trains a model fastest on a cluster")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${deps}")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "${description}")
set(CPACK_STRIP_FILES ON)
include(CPack)
