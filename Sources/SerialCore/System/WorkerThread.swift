import Glibc

/// A joinable pthread that runs one closure.
///
/// The closure is handed to the new thread with a single retain that the thread takes back
/// exactly once, so nothing is over- or under-released however fast the thread finishes.
struct WorkerThread: @unchecked Sendable {  // a pthread_t is a plain handle, valid until joined or detached
    private let handle: pthread_t

    /// Linux caps thread names at 15 bytes plus the terminating zero.
    static let maximumNameLength = 15

    private final class Start {
        let name: String
        let body: () -> Void
        init(name: String, body: @escaping () -> Void) {
            self.name = name
            self.body = body
        }
    }

    /// Why `pthread_create` failed: its error number and the system's words for it.
    struct StartError: Error {
        let errno: Int32
        var reason: String {
            let words = strerror(self.errno).map { String(cString: $0) } ?? "unknown error"
            return self.errno == EAGAIN ? "\(words): a thread or memory limit was reached" : words
        }
    }

    /// Starts a thread named `name` (truncated to 15 bytes on a character boundary; an empty
    /// name becomes `fallbackName`) running `body`.
    ///
    /// - Throws: `StartError` when the system cannot create a thread; `body` is released unrun.
    init(name: String, fallbackName: String, body: @escaping () -> Void) throws(StartError) {
        let name = name.isEmpty ? fallbackName : name
        // Seam: a thread started by a simulated thread joins its run (it waits for the baton).
        #if SERIAL_SIMULATION
        var body = body
        let simulated = SimulatedThread.current.map { creator in
            let (thread, wrapped) = creator.kernel.register(name: name, body: body)
            body = wrapped
            return (creator, thread)
        }
        #endif
        let start = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
        var handle = pthread_t()
        let rc = pthread_create(&handle, nil, { argument in
            let start = Unmanaged<Start>.fromOpaque(argument!).takeRetainedValue()
            WorkerThread.nameCurrentThread(start.name)
            start.body()
            return nil
        }, start)
        #if SERIAL_SIMULATION
        if let (creator, thread) = simulated {
            creator.kernel.started(thread, handle: rc == 0 ? handle : nil, by: creator)
        }
        #endif
        if rc != 0 {
            Unmanaged<Start>.fromOpaque(start).release()
            throw StartError(errno: rc)
        }
        self.handle = handle
    }

    /// Whether the calling thread is this one.
    var isCurrent: Bool { pthread_equal(self.handle, pthread_self()) != 0 }

    /// Waits for the thread to finish and frees its resources.
    func join() {
        #if SERIAL_SIMULATION
        if let thread = SimulatedThread.current, thread.kernel.join(self.handle, by: thread) { return }
        #endif
        checkPthread(pthread_join(self.handle, nil), "pthread_join")
    }

    /// Lets the thread free its own resources when it finishes (used when it cannot be joined
    /// because the caller is the thread itself).
    func detach() {
        checkPthread(pthread_detach(self.handle), "pthread_detach")
    }

    /// The longest prefix of `name` that fits Linux's 15-byte limit without splitting a character.
    static func truncatedName(_ name: String) -> String {
        var result = ""
        var bytes = 0
        for character in name {
            let size = character.utf8.count
            if bytes + size > Self.maximumNameLength { break }
            result.append(character)
            bytes += size
        }
        return result
    }

    /// Names the calling thread through /proc, the same effect as `pthread_setname_np`
    /// (which Glibc's Swift module does not expose). Best effort: a failure only changes what
    /// debuggers and `top` show.
    private static func nameCurrentThread(_ name: String) {
        let descriptor = open("/proc/thread-self/comm", O_WRONLY)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        let bytes = Array(Self.truncatedName(name).utf8)
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    }
}

/// The calling thread's identity, for code above the System layer that must tell threads apart.
package enum CurrentThread {
    /// An opaque id, unique among live threads.
    package static var id: UInt { UInt(pthread_self()) }

    /// The kernel's id of the calling thread (what `top -H`, `gdb` and /proc show).
    package static var systemID: Int32 { linuxGettid() }

    /// The name of thread `systemID` of this process, as /proc shows it (`"?"` if it is gone).
    package static func name(ofSystemID systemID: Int32) -> String {
        let descriptor = open("/proc/self/task/\(systemID)/comm", O_RDONLY)
        guard descriptor >= 0 else { return "?" }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 32)
        let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return "?" }
        return String(decoding: bytes[..<count], as: UTF8.self).trimmingSuffix("\n")
    }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: String) -> String {
        self.hasSuffix(suffix) ? String(self.dropLast(suffix.count)) : self
    }
}

/// glibc's `gettid` (2.30+), which the Glibc module does not export.
@_silgen_name("gettid")
private func linuxGettid() -> Int32
