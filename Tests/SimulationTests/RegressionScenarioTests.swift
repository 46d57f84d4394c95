#if SERIAL_SIMULATION
import SerialTestSupport
import SerialTesting
import Testing

/// The scenarios of bugs this runtime had pass on today's code (each mutant in
/// `Verification/simulation-mutants/` makes its scenario fail: `scripts/simulation-mutants.sh`).
@Suite struct RegressionScenarioTests {
    @Test(arguments: ScenarioCatalog.mutants.values.sorted())
    func passesOnTodaysCode(scenario name: String) async throws {
        let entry = try #require(ScenarioCatalog.entry(named: name))
        let report = await offThePool {
            entry.explore(Simulation(strategy: entry.strategy), seeds: entry.seeds(perUnit: 20))
        }
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
        let steps = report.results.map(\.steps)
        print("\(report.summary); steps \(steps.min() ?? 0)…\(steps.max() ?? 0)")
    }
}
#endif
