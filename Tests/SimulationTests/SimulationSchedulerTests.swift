import Testing

@testable import SerialCore

/// The scheduler as a pure structure: no threads, made-up runnable sets.
@Suite struct SimulationSchedulerTests {
    @Test func randomPickerHasEveryPickerProperty() {
        let make = { RandomPicker(seed: $0) }
        #expect(SchedulePickerChecks.picksOnlyRunnable(make) == [])
        #expect(SchedulePickerChecks.isDeterministicPerSeed(make) == [])
        #expect(SchedulePickerChecks.isUniform(make) == [])
    }

    @Test(arguments: [1, 2, 3, 5])
    func pctPickerRunsTheHighestPriorityBetweenChangePoints(depth: Int) {
        let make = { PCTPicker(seed: $0, depth: $1, expectedSteps: $2) }
        #expect(SchedulePickerChecks.picksOnlyRunnable { make($0, depth, 1_000) } == [])
        #expect(SchedulePickerChecks.isDeterministicPerSeed { make($0, depth, 1_000) } == [])
        #expect(SchedulePickerChecks.respectsPriorities(depth: depth, make) == [])
    }

    @Test func pctDrawsDepthMinusOneChangePointsWithinTheHorizon() {
        for seed: UInt64 in 0..<100 {
            let picker = PCTPicker(seed: seed, depth: 4, expectedSteps: 50)
            #expect(picker.changePoints.count == 3)
            #expect(picker.changePoints.allSatisfy { (1...50).contains($0) })
            #expect(picker.changePoints == picker.changePoints.sorted())
        }
    }

    @Test func brokenPickersFailTheChecks() {
        #expect(SchedulePickerChecks.isDeterministicPerSeed { BrokenPickers.IgnoresSeed(seed: $0) } != [])
        #expect(SchedulePickerChecks.picksOnlyRunnable { BrokenPickers.OffByOne(seed: $0) } != [])
        #expect(SchedulePickerChecks.isUniform { BrokenPickers.FavoursFirst(seed: $0) } != [])
        #expect(
            SchedulePickerChecks.respectsPriorities(depth: 3) {
                BrokenPickers.FakePCT(seed: $0, depth: $1, expectedSteps: $2)
            } != [])
        #expect(
            SchedulePickerChecks.respectsPriorities(depth: 3) {
                BrokenPickers.PCTWithoutChanges(seed: $0, depth: $1, expectedSteps: $2)
            } != [])
    }

    @Test(arguments: [ScheduleStrategy.random, .pct(depth: 3), .pct(depth: 2, expectedSteps: 300)])
    func sameSeedGivesSameChoicesAndTheTokenReplaysThem(strategy: ScheduleStrategy) throws {
        let sets = SchedulePickerChecks.runnableSets(count: 1_000)
        var first = SimulationScheduler(strategy: strategy, seed: 99)
        var second = SimulationScheduler(strategy: strategy, seed: 99)
        let firstChoices = sets.map { first.next(among: $0) }
        #expect(sets.map { second.next(among: $0) } == firstChoices)

        let text = first.token.description
        let token = try #require(ScheduleToken(parsing: text))
        #expect(token.strategy == strategy && token.seed == 99)
        var replay = SimulationScheduler(replaying: token)
        #expect(sets.map { replay.next(among: $0) } == firstChoices)
        #expect(replay.replayedWholly)
        #expect(replay.token.description == text)
    }

    @Test func replayOfAnotherPathReportsDivergence() throws {
        var original = SimulationScheduler(strategy: .random, seed: 5)
        for set in SchedulePickerChecks.runnableSets(count: 100) { _ = original.next(among: set) }
        let token = try #require(ScheduleToken(parsing: original.token.description))

        var longer = SimulationScheduler(replaying: token)
        for set in SchedulePickerChecks.runnableSets(count: 150) { _ = longer.next(among: set) }
        #expect(!longer.replayedWholly)
        #expect(longer.divergence != nil)

        var shorter = SimulationScheduler(replaying: token)
        for set in SchedulePickerChecks.runnableSets(count: 50) { _ = shorter.next(among: set) }
        #expect(!shorter.replayedWholly)
    }

    @Test func singleOptionPointsCostNothingInTheToken() {
        var scheduler = SimulationScheduler(strategy: .random, seed: 1)
        for _ in 0..<1_000 { _ = scheduler.next(among: [3]) }
        #expect(scheduler.steps == 1_000)
        #expect(scheduler.record.decisions == 0)
        #expect(scheduler.token.description.hasSuffix(":0:811c9dc5:"))
    }

    @Test func tokensAreCompact() {
        var scheduler = SimulationScheduler(strategy: .pct(depth: 3), seed: 1)
        for step in 0..<3_000 { _ = scheduler.next(among: step % 3 == 0 ? [0, 1, 2] : [0, 1]) }
        // 1,000 choices of 3 (2 bits) and 2,000 of 2 (1 bit): 4,000 bits, 667 base64 characters.
        #expect(scheduler.token.description.count < 720)
    }

    @Test(arguments: ["", "sim1:random:1", "sim2:random:1:0:811c9dc5:", "sim1:nope:1:0:811c9dc5:",
        "sim1:random:x:0:811c9dc5:", "sim1:random:1:0:811c9dc5:A"])
    func malformedTokensAreRejected(text: String) {
        #expect(ScheduleToken(parsing: text) == nil)
    }

    @Test func strategyNamesRoundTrip() {
        for strategy in [ScheduleStrategy.random, .pct(depth: 1), .pct(depth: 7), .pct(depth: 2, expectedSteps: 50)] {
            #expect(ScheduleStrategy(name: strategy.name) == strategy)
        }
    }
}
