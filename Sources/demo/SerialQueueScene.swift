import Glibc
import SerialRuntime
import Synchronization

/// Seed 004: async and sync work from several threads, in one order, sync on the caller's thread.
enum SerialQueueScene {
    static func run() {
        print("== SerialQueue: one order for async and sync work ==")
        let queue = SerialQueue(label: "demo.serial")
        let log = Mutex<[String]>([])
        let producers = 3
        let done = Atomic<Int>(0)
        let workers = (0..<producers).map { producer in
            SerialQueue(label: "producer-\(producer)")
        }
        for (producer, worker) in workers.enumerated() {
            worker.async {
                for step in 0..<3 {
                    if step == 1 {
                        // sync: the body runs right here, on producer-N's thread, at its turn.
                        let thread = currentThreadLabel()
                        queue.sync { log.withLock { $0.append("producer \(producer) sync  #\(step) on \(thread)") } }
                    } else {
                        queue.async {
                            let thread = currentThreadLabel()
                            log.withLock { $0.append("producer \(producer) async #\(step) on \(thread)") }
                        }
                    }
                }
                done.add(1, ordering: .releasing)
            }
        }
        for worker in workers { worker.shutdown() }
        queue.shutdown()
        for (index, line) in log.withLock({ $0 }).enumerated() {
            print(String(index + 1).leftPadded(to: 3), line)
        }
        print("Each producer's three steps appear in its own order; sync bodies ran on the caller's thread.\n")
    }
}

/// The kernel's name for the calling thread (a queue's worker is named after its label).
func currentThreadLabel() -> String {
    guard let file = fopen("/proc/thread-self/comm", "r") else { return "?" }
    defer { fclose(file) }
    var buffer = [CChar](repeating: 0, count: 32)
    guard fgets(&buffer, 32, file) != nil else { return "?" }
    return String(decoding: buffer.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

extension String {
    func leftPadded(to width: Int) -> String {
        String(repeating: " ", count: max(0, width - self.count)) + self
    }
}
