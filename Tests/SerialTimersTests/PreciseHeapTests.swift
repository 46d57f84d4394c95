import SerialCore
import SerialTestSupport
import SerialTesting
@testable import SerialTimers
import Testing

/// `TimerService.PreciseHeap` (the timers with a tolerance under a tick), checked step by step
/// against a dictionary of what it holds: lazy removal and moves never lose, repeat or
/// resurrect a timer, and the heap stays within a constant factor of what it holds.
@Suite("TimerService's precise heap", .onItsOwnThread)  // CPU-bound for seconds: off the cooperative threads
struct PreciseHeapTests {
    typealias Timer = TimerService.Timer

    @Test(arguments: [1, 2, 3, 42, 1_000, 0xC0FFEE, 0xDEAD_BEEF, 7_777_777] as [UInt64])
    func randomInsertsMovesRemovesAndExpiriesMatchTheModel(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        var heap = TimerService.PreciseHeap()
        let timers = (0..<300).map { _ in Timer(deadline: .distantFuture, stage: .pending {}) }
        var held: [Int: UInt64] = [:]  // id → deadline
        var now: UInt64 = 1_000
        let ids = Dictionary(uniqueKeysWithValues: timers.enumerated().map { (ObjectIdentifier($0.element), $0.offset) })
        for step in 0..<5_000 {
            func context() -> Comment { Comment(rawValue: "seed \(seed), step \(step), now \(now)") }  // on failure only
            let id = Int.random(in: 0..<timers.count, using: &random)
            let deadline = now + UInt64.random(in: 0..<[3, 50, 2_000][step % 3], using: &random)
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<3:
                guard held[id] == nil else { continue }
                timers[id].deadline = MonotonicInstant(nanoseconds: deadline)
                heap.insert(timers[id])
                held[id] = deadline
            case 3..<6:
                guard held[id] != nil else { continue }
                heap.move(timers[id], to: MonotonicInstant(nanoseconds: deadline))
                held[id] = deadline
            case 6..<8:
                #expect(heap.remove(timers[id]) == (held.removeValue(forKey: id) != nil), context())
            default:
                now += UInt64.random(in: 0..<60, using: &random)
                var expired: [Timer] = []
                heap.expire(upTo: MonotonicInstant(nanoseconds: now), into: &expired)
                let got = expired.map { ids[ObjectIdentifier($0)]! }
                let due = held.filter { $0.value <= now }
                #expect(Set(got) == Set(due.keys) && got.count == due.count, context())
                #expect(got.map { held[$0]! } == got.map { held[$0]! }.sorted(), "in deadline order; \(context())")
                for id in got { held[id] = nil }
                #expect(expired.allSatisfy { !$0.isWaiting }, context())
            }
            #expect(heap.count == held.count, context())
            #expect(heap.earliestDeadline()?.nanoseconds == held.values.min(), context())
            // The timer this step touched at every step; all 300 every 64 steps (each look is O(1),
            // but 300 of them at every step made this the suite's slowest test).
            #expect(heap.holds(timers[id]) == (held[id] != nil), context())
            if step % 64 == 0 {
                #expect(timers.indices.allSatisfy { heap.holds(timers[$0]) == (held[$0] != nil) }, context())
            }
            heap.checkInvariants()
        }
        var removed: [Int] = []
        heap.removeAll { removed.append(ids[ObjectIdentifier($0)]!) }
        #expect(removed.sorted() == held.keys.sorted())
        #expect(heap.count == 0 && heap.earliestDeadline() == nil)
    }
}
