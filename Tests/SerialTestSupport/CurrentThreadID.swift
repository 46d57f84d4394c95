import Glibc

/// The calling thread's pthread id, to check which thread ran a body.
public enum CurrentThreadID {
    public static var value: UInt { UInt(pthread_self()) }
}

extension CurrentThreadID {
    /// The calling thread's kernel id (its folder in /proc/self/task).
    public static var systemID: Int32 { testSupportGettid() }
}

/// glibc's `gettid` (2.30+), which the Glibc module does not export.
@_silgen_name("gettid")
private func testSupportGettid() -> Int32
