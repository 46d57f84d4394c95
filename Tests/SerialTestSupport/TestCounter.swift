import Synchronization

/// A thread-safe counter that `#expect` can read directly (an `Atomic` cannot be copied into it).
public final class TestCounter: Sendable {
    private let storage = Atomic<Int>(0)

    public init() {}

    @discardableResult
    public func increment(by amount: Int = 1) -> Int {
        self.storage.add(amount, ordering: .sequentiallyConsistent).newValue
    }

    public var value: Int { self.storage.load(ordering: .sequentiallyConsistent) }
}

/// A thread-safe boolean that `#expect` can read directly.
public final class TestFlag: Sendable {
    private let storage = Atomic<Bool>(false)

    public init() {}

    public func set() { self.storage.store(true, ordering: .sequentiallyConsistent) }

    public var isSet: Bool { self.storage.load(ordering: .sequentiallyConsistent) }
}
