import Glibc

/// What the test binary was built with, for the few tests a sanitizer cannot run.
public enum Sanitizers {
    /// Whether AddressSanitizer's runtime is in this process (its entry point resolves, or its
    /// library is mapped). Tests that cap the address space (`RLIMIT_AS`) cannot run under it:
    /// its shadow memory needs terabytes of address space.
    public static let addressSanitizerIsActive: Bool = {
        if dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__asan_init") != nil { return true }
        guard let maps = fopen("/proc/self/maps", "r") else { return false }
        defer { fclose(maps) }
        var line = [CChar](repeating: 0, count: 512)
        while fgets(&line, 512, maps) != nil {
            if String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).contains("asan") {
                return true
            }
        }
        return false
    }()
}
