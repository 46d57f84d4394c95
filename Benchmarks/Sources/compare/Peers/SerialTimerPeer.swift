import SerialRuntime

/// Stand-in until the TimerService branch is merged: the serial timer columns print n/a.
struct SerialTimerPeer: TimerPeer {
    static let column = Column.serial
    static var unavailableReason: String? { "n/a: TimerService (branch timers) is not merged into this build yet" }
    struct Handle {}

    init(label: String) { fatalError(Self.unavailableReason!) }
    func schedule(afterNanoseconds nanoseconds: Int64, _ work: @escaping @Sendable () -> Void) -> Handle { Handle() }
    func cancel(_ handle: Handle) {}
    func execute(_ work: @escaping @Sendable () -> Void) {}
    func close() {}
}
