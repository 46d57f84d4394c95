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
    /// A `WorkerPool` could not start its threads (`pthread_create`'s errno, in words).
    case poolThreadStartFailed(pool: String, errno: Int32, reason: String)
    /// The queue was to run on a `WorkerPool` that has been shut down.
    case poolShutDown(label: String, pool: String)

    /// One sentence saying what happened, for logs and error messages.
    public var description: String {
        switch self {
        case .shutDown(let label):
            return "SerialQueue \"\(label)\" is shut down; the work was rejected, not run"
        case .full(let label, let limit):
            return "SerialQueue \"\(label)\" is full (\(limit) items waiting, its maximumQueued); the work was not enqueued"
        case .poolThreadStartFailed(let pool, let errno, let reason):
            return "WorkerPool \"\(pool)\": cannot start its threads: pthread_create failed with "
                + "errno \(errno) (\(reason)); use fewer threads or raise the limit (ulimit -u)"
        case .poolShutDown(let label, let pool):
            return "SerialQueue \"\(label)\": cannot be created on WorkerPool \"\(pool)\", which is shut down; "
                + "create it on a running pool, or with a thread of its own"
        case .threadStartFailed(let label, let errno, let reason):
            return "SerialQueue \"\(label)\": cannot start its worker thread: pthread_create failed with "
                + "errno \(errno) (\(reason)); lower the number of threads or raise the limit (ulimit -u)"
        }
    }
}
