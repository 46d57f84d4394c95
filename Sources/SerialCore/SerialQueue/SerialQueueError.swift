/// Why a `SerialQueue` refused: expected outcomes a caller can handle instead of a trap.
public enum SerialQueueError: Error, Hashable, CustomStringConvertible {
    /// The queue had been shut down before the work was submitted; the work was not run.
    case shutDown(label: String)
    /// `maximumQueued` items were already waiting (`tryAsync`); the work was not enqueued.
    case full(label: String, limit: Int)
    /// The worker thread could not be started (`SerialQueue.make`): `pthread_create` returned
    /// `errno`, described by `reason`. Usually a limit: RLIMIT_NPROC, the kernel's thread limit
    /// (`/proc/sys/kernel/threads-max`), or memory for the thread's stack.
    case threadStartFailed(label: String, errno: Int32, reason: String)

    /// One sentence saying what happened, for logs and error messages.
    public var description: String {
        switch self {
        case .shutDown(let label):
            return "SerialQueue \"\(label)\" is shut down; the work was rejected, not run"
        case .full(let label, let limit):
            return "SerialQueue \"\(label)\" is full (\(limit) items waiting, its maximumQueued); the work was not enqueued"
        case .threadStartFailed(let label, let errno, let reason):
            return "SerialQueue \"\(label)\": cannot start its worker thread: pthread_create failed with "
                + "errno \(errno) (\(reason)); lower the number of threads or raise the limit (ulimit -u)"
        }
    }
}
