/// glibc's `malloc_trim`, which the Glibc module does not export.
package enum MallocTrim {
    /// Returns free memory at the top of every malloc arena, and whole free pages inside them,
    /// to the system.
    package static func returnFreeMemory() {
        _ = glibcMallocTrim(0)
    }
}

@_silgen_name("malloc_trim")
private func glibcMallocTrim(_ pad: Int) -> Int32
