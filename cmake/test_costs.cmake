# Included by ctest after the discovered tests are defined (CMakeLists.txt
# appends it to TEST_INCLUDE_FILES last). COST makes ctest start the
# slowest tests first, so none of them runs alone at the end of a run on a
# fresh tree, which has no timings of earlier runs. The costs are seconds
# measured on a 2-core machine (the discovered tests of 20 s or more); the
# chaos soak's is set beside it in CMakeLists.txt.
set(weir_test_costs
  "ClusterTest.BatchStagesRerunOnlyWhatWasLost/tls" 122
  "ClusterTest.BatchStagesRerunOnlyWhatWasLost" 67
  "HaClusterTest.JobSurvivesThreeLeaderChangesExactlyOnce" 52
  "PackageTest.TheDebianPackageUnpackedIntoAScratchRootRunsAJobLibraryOnItsServices/tls" 49
  "ClusterSqlTest.TheShellRunsItsQueriesOnTheClusterAsInProcess/tls" 38
  "PackageTest.TheDebianPackageUnpackedIntoAScratchRootRunsAJobLibraryOnItsServices" 37
  "KafkaUnreachableTest.ASourceOrSinkWithoutABrokerFailsNamingTheAddress" 31
  "ClusterTest.TaskFailoverRestartsOnlyTheFailedSubtask/tls" 31
  "ClusterTest.KilledTaskManagersAreReplacedAndOutputIsExactlyOnce/tls" 27
  "UnalignedTest.RescalingTwoThreeOneThroughUnalignedCheckpointsIsExactlyOnce" 23
  "ClusterTest.UnalignedCheckpointsSurviveAKilledTaskManagerExactlyOnce/tls" 20
  "WebUiTest.ShowsTheClusterAndAJobAndStopsItWithASavepoint/tls" 26
  "ClusterTest.PersistedResultsInS3SurviveALostTaskManager/tls" 24
  "HaClusterTest.LeaderLossWithJobRecordsAndCheckpointsInS3" 24
  "WebUiTest.ShowsTheClusterAndAJobAndStopsItWithASavepoint" 23
  "HaClusterTest.LeaderCutOffFromZooKeeperStepsDown" 22
  "S3Test.AJobOutlivesAnS3OutageExactlyOnce" 22
  "ClusterTest.PersistedResultsSurviveALostTaskManager/tls" 22
  "ClusterTest.TaskFailoverRestartsOnlyTheFailedSubtask" 21
  "ClusterTest.FrozenTaskManagerIsDetectedByHeartbeatTimeout/tls" 20
  "ClusterSqlTest.TheShellRunsItsQueriesOnTheClusterAsInProcess" 20)
list(LENGTH weir_test_costs n)
math(EXPR last "${n} - 1")
foreach(i RANGE 0 ${last} 2)
  math(EXPR j "${i} + 1")
  list(GET weir_test_costs ${i} name)
  list(GET weir_test_costs ${j} cost)
  set_tests_properties("${name}" PROPERTIES COST ${cost})  # a test this tree lacks: no effect
endforeach()
