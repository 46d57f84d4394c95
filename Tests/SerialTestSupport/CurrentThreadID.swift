import Glibc

/// The calling thread's pthread id, to check which thread ran a body.
public enum CurrentThreadID {
    public static var value: UInt { UInt(pthread_self()) }
}
