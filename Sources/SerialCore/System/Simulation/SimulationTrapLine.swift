#if SERIAL_SIMULATION
import Glibc

/// Makes a trap on a simulated thread (a `fatalError` of `Misuse`, a failed `precondition`, a
/// crash) print the replay line before the process ends.
///
/// A signal handler may not allocate or lock, so it writes with `write(2)` only: the fixed part
/// of the line was rendered when the run started, the rest (decisions, hash, the choices in
/// base64url) is rendered here digit by digit. It then restores the handler it replaced and
/// returns: the faulting instruction runs again and the previous handler (Swift's backtracer,
/// or the default action) ends the process as it would have.
enum SimulationTrapLine {
    private static let signals: [Int32] = [SIGILL, SIGTRAP, SIGABRT, SIGSEGV, SIGBUS, SIGFPE]
    /// The handlers replaced, by signal number (filled once, before any handler can run).
    nonisolated(unsafe) private static var previous = Array<sigaction>(repeating: sigaction(), count: 32)
    private static let installed = LockedValue(false)

    /// Installs the handlers once per process.
    static func install() {
        Self.installed.withLock { installed in
            guard !installed else { return }
            installed = true
            _ = Base64URL.alphabet.count  // initialised here: a handler must not allocate
            for signal in Self.signals {
                var action = sigaction()
                action.__sigaction_handler.sa_handler = { signal in SimulationTrapLine.handle(signal) }
                sigemptyset(&action.sa_mask)
                action.sa_flags = SA_ONSTACK  // on the thread's alternate stack: see below
                var old = sigaction()
                sigaction(signal, &action, &old)
                Self.previous[Int(signal)] = old
            }
        }
    }

    /// Runs `body` with an alternate signal stack for the calling thread, so that the handler runs
    /// after a stack overflow too (on the exhausted stack it would fault again, and print nothing).
    static func withAlternateStack(_ body: () -> Void) {
        let size = 256 * 1024
        let memory = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
        var stack = stack_t(ss_sp: memory, ss_flags: 0, ss_size: size)
        sigaltstack(&stack, nil)
        body()
        var disabled = stack_t()
        disabled.ss_flags = Int32(SS_DISABLE)
        sigaltstack(&disabled, nil)
        memory.deallocate()
    }

    private static func handle(_ signal: Int32) {
        if let thread = SimulatedThread.current {
            thread.kernel.writeTrapLine(thread: thread, signal: signal)
        }
        var old = Self.previous[Int(signal)]
        sigaction(signal, &old, nil)
        if signal == SIGABRT || signal == SIGFPE { raise(signal) }
    }
}

extension SimulationKernel {
    /// Called from a signal handler on `thread`: writes the replay line to standard error.
    /// No allocation, no lock (the trapping thread holds the baton; nobody else touches the record).
    func writeTrapLine(thread: SimulatedThread, signal: Int32) {
        var out = SignalSafeWriter()
        out.write("\nsimulation failed (trap, signal ")
        out.write(number: UInt64(signal))
        out.write(") in T")
        out.write(number: UInt64(thread.id))
        out.write(" at step ")
        out.write(number: UInt64(self.scheduler.steps))
        self.trapLineSuffix.withUnsafeBufferPointer { out.write(bytes: $0) }
        let record = self.scheduler.record
        out.write(number: UInt64(record.decisions))
        out.write(":")
        out.write(hex8: record.hash)
        out.write(":")
        record.bytes.withUnsafeBufferPointer { out.write(base64URL: $0) }
        out.write("\n")
        out.flush()
    }
}

/// Buffered `write(2)` to standard error for signal handlers: a fixed buffer, no allocation.
private struct SignalSafeWriter {
    private var buffer: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
    private var count = 0
    private static let capacity = 64

    mutating func write(byte: UInt8) {
        if self.count == Self.capacity { self.flush() }
        withUnsafeMutableBytes(of: &self.buffer) { $0[self.count] = byte }
        self.count += 1
    }

    mutating func write(_ text: StaticString) {
        text.withUTF8Buffer { for byte in $0 { self.write(byte: byte) } }
    }

    mutating func write(bytes: UnsafeBufferPointer<UInt8>) {
        for byte in bytes { self.write(byte: byte) }
    }

    mutating func write(number: UInt64) {
        var divisor: UInt64 = 1
        while number / divisor >= 10 { divisor *= 10 }
        while divisor > 0 {
            self.write(byte: UInt8(ascii: "0") + UInt8(number / divisor % 10))
            divisor /= 10
        }
    }

    mutating func write(hex8 value: UInt32) {
        for shift in stride(from: 28, through: 0, by: -4) {
            let digit = UInt8((value >> UInt32(shift)) & 0xF)
            self.write(byte: digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10)
        }
    }

    /// The same text as `Base64URL.encode`.
    mutating func write(base64URL bytes: UnsafeBufferPointer<UInt8>) {
        var index = 0
        while index < bytes.count {
            let chunkCount = min(3, bytes.count - index)
            var value: UInt32 = 0
            for offset in 0..<chunkCount { value |= UInt32(bytes[index + offset]) << (16 - 8 * UInt32(offset)) }
            for position in 0...chunkCount {
                self.write(byte: Base64URL.alphabet[Int((value >> (18 - 6 * UInt32(position))) & 63)])
            }
            index += 3
        }
    }

    mutating func flush() {
        let count = self.count
        withUnsafeBytes(of: &self.buffer) { _ = Glibc.write(2, $0.baseAddress, count) }
        self.count = 0
    }
}
#endif
