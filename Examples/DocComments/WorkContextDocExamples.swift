import SerialRuntime

// The example of WorkContext's doc comment: compiled, not run (installing a propagator is
// process-wide, and the WorkContext test suite owns that while it runs).

func workContextInstallExample() {
    // example: WorkContext
    WorkContext.install(WorkContext.Propagator(
        capture: { RequestID.current },                                          // where work is submitted
        restore: { id, work in RequestID.$current.withValue(id as? String) { work() } }   // where it runs
    ))
    // end example
}
