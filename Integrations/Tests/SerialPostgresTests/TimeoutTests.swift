import Testing

@testable import SerialPostgres

/// `withTimeout` never drops a value that arrives after its timeout: a connection established
/// while the timeout cancelled its attempt must be closed, not deinitialized open (PostgresNIO
/// asserts on that in debug builds, and leaks the socket in release ones).
@Suite("A bounded wait")
struct TimeoutTests {
    @Test func aValueThatArrivesAfterTheTimeoutGoesToLate() async throws {
        let late = LateValues()
        await #expect(throws: TimeoutReached.self) {
            try await withTimeout(.milliseconds(1)) {
                // Ends only when the timeout cancels it (or after a minute), with a value all the same.
                try? await Task.sleep(for: .seconds(60))
                return 7
            } late: { value in
                await late.append(value)
            }
        }
        #expect(await late.values == [7], "the value that arrived after the timeout was dropped")
    }

    @Test func aValueInTimeIsReturnedAndNothingIsLate() async throws {
        let late = LateValues()
        let value = try await withTimeout(.seconds(60)) { 5 } late: { await late.append($0) }
        #expect(value == 5)
        #expect(await late.values.isEmpty)
    }
}

private actor LateValues {
    var values: [Int] = []
    func append(_ value: Int) { self.values.append(value) }
}
