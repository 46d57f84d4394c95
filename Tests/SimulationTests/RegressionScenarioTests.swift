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
            Simulation(strategy: entry.strategy).explore(name, seeds: entry.seeds(perUnit: 20), entry.scenario)
        }
        #expect(report.failures.isEmpty, "\(report.failures.map { $0.failure!.description })")
        print("\(report.summary); steps \(report.results.map(\.steps).min() ?? 0)…\(report.results.map(\.steps).max() ?? 0)")
    }
}
#endif
