import SerialCore
@testable import SerialRequests
import Testing

@Suite("CredentialRefresh: single flight per generation, refresh window")
struct CredentialRefreshTests {
    private let start = MonotonicInstant(nanoseconds: 1_000_000_000_000)

    @Test func onlyTheFirstExpiryOfAGenerationRaisesARefresh() {
        var refresh = CredentialRefresh(credential: "t0", limit: 3, window: .seconds(60), installedAt: .init(nanoseconds: 0))
        let first = refresh.credentialExpired(sentGeneration: 0, now: self.start, token: 7)
        #expect(first == .parkAndRefresh(token: 7))
        for token in 8..<100 as Range<UInt64> {
            let decision = refresh.credentialExpired(sentGeneration: 0, now: self.start, token: token)
            #expect(decision == .park)
        }
        let started = refresh.start()
        #expect(started?.token == 7 && started?.expired == "t0")
        let startedAgain = refresh.start()
        #expect(startedAgain == nil, "a running refresh does not start twice")
        let whileRunning = refresh.credentialExpired(sentGeneration: 0, now: self.start, token: 100)
        #expect(whileRunning == .park)
        let installed = refresh.succeeded(token: 7, credential: "t1", now: .init(nanoseconds: 0))
        #expect(installed)
        #expect(refresh.generation == 1 && refresh.credential == "t1" && refresh.phase == .idle)
    }

    @Test func anExpiryFromAnOlderGenerationIsResentWithoutARefresh() {
        var refresh = CredentialRefresh(credential: 0, limit: 3, window: .seconds(60), installedAt: .init(nanoseconds: 0))
        _ = refresh.credentialExpired(sentGeneration: 0, now: self.start, token: 1)
        _ = refresh.start()
        _ = refresh.succeeded(token: 1, credential: 1, now: .init(nanoseconds: 0))
        let decision = refresh.credentialExpired(sentGeneration: 0, now: self.start, token: 2)
        #expect(decision == .resend)
        #expect(refresh.phase == .idle)
    }

    @Test func answersWithAStaleTokenAreIgnored() {
        var refresh = CredentialRefresh(credential: 0, limit: 3, window: .seconds(60), installedAt: .init(nanoseconds: 0))
        _ = refresh.credentialExpired(sentGeneration: 0, now: self.start, token: 1)
        let early = refresh.succeeded(token: 1, credential: 5, now: .init(nanoseconds: 0))
        #expect(!early, "not started yet")
        _ = refresh.start()
        let wrongSuccess = refresh.succeeded(token: 2, credential: 5, now: .init(nanoseconds: 0))
        #expect(!wrongSuccess)
        let wrongFailure = refresh.failed(token: 2, now: self.start, retryDelay: .seconds(1))
        #expect(wrongFailure == nil)
        let failed = refresh.failed(token: 1, now: self.start, retryDelay: .seconds(1))
        #expect(failed == .failParked, "raised by a rejection: the parked requests fail")
        let afterEnd = refresh.succeeded(token: 1, credential: 5, now: .init(nanoseconds: 0))
        #expect(!afterEnd, "already ended")
        #expect(refresh.generation == 0 && refresh.credential == 0)
    }

    @Test func theWindowRefusesTheRefreshAfterTheLimitUntilTheOldestLeavesIt() {
        var refresh = CredentialRefresh(credential: 0, limit: 2, window: .seconds(10), installedAt: .init(nanoseconds: 0))
        var token: UInt64 = 0
        func cycle(at instant: MonotonicInstant) -> CredentialRefresh<Int>.ExpiryDecision {
            token += 1
            let decision = refresh.credentialExpired(sentGeneration: refresh.generation, now: instant, token: token)
            if case .parkAndRefresh(let raised) = decision {
                _ = refresh.start()
                _ = refresh.succeeded(token: raised, credential: Int(raised), now: .init(nanoseconds: 0))
            }
            return decision
        }
        let decisions = [0, 1, 9, 10, 10].map { cycle(at: self.start + .seconds($0)) }
        #expect(decisions == [
            .parkAndRefresh(token: 1), .parkAndRefresh(token: 2), .limitExceeded,
            .parkAndRefresh(token: 4),  // the first refresh has left the window
            .limitExceeded,
        ])
    }
}

@Suite("PendingList: submission order with lazy removal")
struct PendingListTests {
    private func slot(_ id: UInt64, _ token: UInt64) -> PendingList.Slot {
        PendingList.Slot(id: RequestID(id), token: token, kind: nil, submittedAt: MonotonicInstant(nanoseconds: id))
    }

    @Test func requeuedRequestsGoBackToTheirPlaceInSubmissionOrder() {
        var list = PendingList()
        for id in [1, 3, 5, 7] as [UInt64] { list.insert(self.slot(id, id)) }
        list.insert(self.slot(4, 40))
        list.insert(self.slot(0, 50))
        #expect(list.slots.map(\.id.rawValue) == [0, 1, 3, 4, 5, 7])
        #expect(list.isSorted)
    }

    @Test func staleSlotsAreDroppedFromTheHead() {
        var list = PendingList()
        for id in 1...200 as ClosedRange<UInt64> { list.insert(self.slot(id, id)) }
        list.dropStaleHead { $0.id.rawValue > 150 }
        #expect(list.slots[list.head].id.rawValue == 151)
        #expect(list.slots.count - list.head == 50)
        list.dropStaleHead { _ in false }
        #expect(list.slots.isEmpty && list.head == 0)
    }
}
