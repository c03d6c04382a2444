# The Debian package (make package): cpack -G DEB in the build directory makes
#   weir_<version>_<arch>.deb        the weir executable (stripped), the headers
#                                    and CMake package for job libraries, systemd
#                                    units, /etc/weir/weir.toml, man pages
#   weir-dbgsym_<version>_<arch>.ddeb  the executable's debug info
# The units, the config file and the man pages are the `package` component,
# left out of a plain `cmake --install` (which installs under any prefix).

find_program(HELP2MAN help2man)
set(WEIR_MAN_PAGES "")
if(HELP2MAN)
  # NAME|command words|what it does: a man page from the command's --help.
  set(WEIR_MAN_SPECS
    "weir||a stateful stream processing engine"
    "weir-jobmanager|jobmanager|run a weir JobManager"
    "weir-taskmanager|taskmanager|run a weir TaskManager"
    "weir-run|run|submit a job to a weir cluster"
    "weir-sql|sql|run a Flink SQL script on weir")
  foreach(spec ${WEIR_MAN_SPECS})
    string(REPLACE "|" ";" parts "${spec}")
    list(GET parts 0 page)
    list(GET parts 1 words)
    list(GET parts 2 what)
    set(out ${CMAKE_BINARY_DIR}/man/${page}.1.gz)
    add_custom_command(OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
      COMMAND ${HELP2MAN} --no-info --no-discard-stderr --version-string=${PROJECT_VERSION} --name=${what}
              --output=${CMAKE_BINARY_DIR}/man/${page}.1 "$<TARGET_FILE:weir> ${words}"
      COMMAND gzip -9nf ${CMAKE_BINARY_DIR}/man/${page}.1
      DEPENDS weir
      COMMENT "Writing the man page ${page}(1)"
      VERBATIM)
    list(APPEND WEIR_MAN_PAGES ${out})
  endforeach()
  add_custom_target(weir_man DEPENDS ${WEIR_MAN_PAGES})
  install(FILES ${WEIR_MAN_PAGES} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT package EXCLUDE_FROM_ALL)
endif()

install(FILES packaging/systemd/weir-jobmanager.service packaging/systemd/weir-taskmanager.service
        DESTINATION /lib/systemd/system COMPONENT package EXCLUDE_FROM_ALL)
install(FILES packaging/weir.toml DESTINATION /etc/weir COMPONENT package EXCLUDE_FROM_ALL)
install(FILES README.md docs/cli.md docs/rest-api.md docs/metrics.md docs/sql.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT package EXCLUDE_FROM_ALL)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME weir)
set(CPACK_PACKAGE_VENDOR "weir")
set(CPACK_PACKAGE_CONTACT "weir maintainers <weir@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "stateful stream processing engine with exactly-once checkpoints")
set(CPACK_PACKAGE_DESCRIPTION
    "weir runs parallel dataflow jobs with keyed state and exactly-once checkpoints, embedded or on a JobManager/TaskManager cluster with a REST API and web UI; Flink SQL, Kafka, PostgreSQL and S3 connectors.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL Unspecified package)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
set(CPACK_DEBIAN_PACKAGE_NAME weir)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION misc)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Building a job library against the package takes a compiler, CMake and
# Abseil's headers (weirConfig.cmake finds absl).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "g++, cmake, libabsl-dev")
set(CPACK_DEBIAN_DEBUGINFO_PACKAGE ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_SOURCE_DIR}/packaging/postinst ${CMAKE_SOURCE_DIR}/packaging/postrm ${CMAKE_SOURCE_DIR}/packaging/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
