import Glibc
import SerialTestSupport
import SerialTesting
import Testing

@testable import SerialCore

@Suite("A pool thread's own run queue")
struct LocalRunQueueTests {
    private func word(_ value: Int) -> PoolRunnable.Word {
        PoolRunnable.Word(rawValue: UInt(value) << 4)
    }
    private func value(_ word: PoolRunnable.Word) -> Int { Int(word.rawValue >> 4) }

    @Test func theOwnerTakesInOrderAndAFullRingRefuses() {
        let ring = LocalRunQueue()
        for value in 0..<LocalRunQueue.capacity { #expect(ring.push(self.word(value))) }
        #expect(!ring.push(self.word(9_999)), "a full ring took one more")
        var taken: [PoolRunnable.Word] = []
        ring.takeHalf(into: &taken)
        #expect(taken.map(self.value) == Array(0..<LocalRunQueue.capacity / 2))
        #expect(ring.push(self.word(LocalRunQueue.capacity)))
        var popped: [Int] = []
        while let word = ring.pop() { popped.append(self.value(word)) }
        #expect(popped == Array(LocalRunQueue.capacity / 2...LocalRunQueue.capacity))
        #expect(ring.isEmpty)
    }

    @Test func aThiefTakesTheFirstHalfAndRunsItsFirst() {
        let victim = LocalRunQueue()
        let thief = LocalRunQueue()
        for value in 0..<5 { #expect(victim.push(self.word(value))) }
        let first = victim.stealHalf(into: thief)
        #expect(first.map(self.value) == 0)
        var thiefs: [Int] = []
        while let word = thief.pop() { thiefs.append(self.value(word)) }
        #expect(thiefs == [1, 2])
        var victims: [Int] = []
        while let word = victim.pop() { victims.append(self.value(word)) }
        #expect(victims == [3, 4])
        #expect(victim.stealHalf(into: thief).map(self.value) == nil)
    }

    /// One owner pushes and pops while two thieves steal half at a time: every word is taken
    /// exactly once, whatever the interleaving (the test states no timing).
    @Test func everyWordIsTakenExactlyOnceWhileThievesSteal() async {
        let seed = StressConfiguration.seed()
        print("LocalRunQueue race: seed \(seed)")
        // Three threads that never block, on two cores, while the rest of the pass runs: fewer
        // words under ThreadSanitizer, whose every atomic operation is slow (20,000 take 4 s alone).
        let total = StressConfiguration.iterations(Sanitizers.threadSanitizerIsActive ? 20_000 : 100_000)
        let owner = LocalRunQueue()
        let seen = LockedValue([UInt8](repeating: 0, count: total))
        let pushed = TestCounter()
        @Sendable func record(_ word: PoolRunnable.Word) {
            seen.withLock { $0[Int(word.rawValue >> 4)] += 1 }
        }
        await offThePool {
            withWatchdog(
                timeout: .seconds(120), "the race of an owner and two thieves did not end (seed \(seed))"
            ) {
                runThreads(3) { index in
                    if index == 0 {
                        var random = SeededRandom(seed: seed)
                        var value = 0
                        while value < total {
                            if Bool.random(using: &random), let word = owner.pop() {
                                record(word)
                                continue
                            }
                            if owner.push(PoolRunnable.Word(rawValue: UInt(value) << 4)) {
                                value += 1
                            } else {
                                var half: [PoolRunnable.Word] = []
                                owner.takeHalf(into: &half)
                                half.forEach(record)
                            }
                        }
                        while let word = owner.pop() { record(word) }
                        _ = pushed.increment()
                    } else {
                        let own = LocalRunQueue()
                        while pushed.value == 0 || !owner.isEmpty {
                            guard let first = owner.stealHalf(into: own) else {
                                sched_yield()  // nothing to steal: leave the core to the owner
                                continue
                            }
                            record(first)
                            while let word = own.pop() { record(word) }
                        }
                    }
                }
            }
        }
        let counts = seen.withLock { $0 }
        let wrong = counts.indices.filter { counts[$0] != 1 }
        #expect(
            wrong.isEmpty,
            "seed \(seed): \(wrong.count) words taken other than once, first \(wrong.prefix(5).map { ($0, counts[$0]) })"
        )
    }
}
