import Foundation
import Testing

@testable import SerialCore

/// The default width of a pool: processors, capped by a cgroup quota, replaced by the override;
/// malformed input falls back, never traps.
@Suite("WorkerPool's default width")
struct PoolWidthTests {
    @Test func cgroupV2CPUMaxIsAQuotaOverAPeriodOrNoLimit() {
        #expect(PoolWidth.cgroupV2Quota(cpuMax: "150000 100000\n") == 1.5)
        #expect(PoolWidth.cgroupV2Quota(cpuMax: "200000 100000") == 2)
        #expect(PoolWidth.cgroupV2Quota(cpuMax: "max 100000\n") == nil)
        for malformed in ["", "\n", "150000", "abc 100000", "150000 0", "-5 100000", "1 2 3", "150000 100000 x"] {
            #expect(PoolWidth.cgroupV2Quota(cpuMax: malformed) == nil, "\"\(malformed)\" read as a quota")
        }
    }

    @Test func cgroupV1QuotaIsTheCFSQuotaOverItsPeriodOrNoLimit() {
        #expect(PoolWidth.cgroupV1Quota(quota: "50000\n", period: "100000\n") == 0.5)
        #expect(PoolWidth.cgroupV1Quota(quota: "-1\n", period: "100000\n") == nil)
        #expect(PoolWidth.cgroupV1Quota(quota: "x", period: "100000") == nil)
        #expect(PoolWidth.cgroupV1Quota(quota: "50000", period: "") == nil)
    }

    @Test func procSelfCgroupGivesTheV2PathAndTheV1CPUPath() {
        let v2 = PoolWidth.cgroupPaths(procSelfCgroup: "0::/system.slice/app.service\n")
        #expect(v2.v2 == "/system.slice/app.service" && v2.v1CPU == nil)
        let v1 = PoolWidth.cgroupPaths(
            procSelfCgroup: "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n1:name=systemd:/docker/abc\n")
        #expect(v1.v2 == nil && v1.v1CPU == "/docker/abc")
        let garbage = PoolWidth.cgroupPaths(procSelfCgroup: "nonsense\n::\n0::relative\n")
        #expect(garbage.v2 == nil && garbage.v1CPU == nil)
        #expect(PoolWidth.selfAndAncestors(of: "/a/b") == ["/a/b", "/a", "/"])
        #expect(PoolWidth.selfAndAncestors(of: "/") == ["/"])
    }

    @Test func theAllowedListCountsEveryProcessorInItsRanges() {
        let status = "Name:\tswift\nCpus_allowed:\tff\nCpus_allowed_list:\t0-3,8,10-11\nMems_allowed_list:\t0\n"
        #expect(PoolWidth.allowedProcessors(procSelfStatus: status) == 7)
        #expect(PoolWidth.allowedProcessors(procSelfStatus: "Cpus_allowed_list:\t5\n") == 1)
        for malformed in ["", "Cpus_allowed_list:\t\n", "Cpus_allowed_list:\t3-1\n", "Cpus_allowed_list:\t0-x\n",
            "Cpus_allowed_list:\t0,,2\n", "Cpus_allowed_list:\t0-1-2\n", "Cpus_allowed_list:\t-1\n"]
        {
            #expect(PoolWidth.allowedProcessors(procSelfStatus: malformed) == nil, "\"\(malformed)\" was read")
        }
    }

    @Test func theWidthIsTheProcessorsCappedByTheQuotaRoundedUp() {
        #expect(PoolWidth.decide(processors: 16, quota: nil, override: nil).threads == 16)
        #expect(PoolWidth.decide(processors: 16, quota: 1.5, override: nil).threads == 2)
        #expect(PoolWidth.decide(processors: 16, quota: 0.1, override: nil).threads == 1)
        #expect(PoolWidth.decide(processors: 2, quota: 8, override: nil).threads == 2)
        #expect(PoolWidth.decide(processors: 0, quota: nil, override: nil).threads == 1)
    }

    @Test func aValidOverrideWinsAndAnInvalidOneIsIgnoredAndNamed() {
        #expect(PoolWidth.decide(processors: 2, quota: 1, override: "8").threads == 8)
        #expect(PoolWidth.decide(processors: 2, quota: 1, override: " 3\n").threads == 3)
        for invalid in ["", "0", "-2", "four", "2.5", "99999999999999999999999"] {
            let decision = PoolWidth.decide(processors: 4, quota: nil, override: invalid)
            #expect(decision.threads == 4 && decision.ignoredOverride == invalid, "\"\(invalid)\" was not ignored")
        }
    }

    /// The files as a container lays them out, in a folder of the test's: the smallest quota on
    /// the way to the root counts; v1 is read when v2 says nothing; unreadable files give no quota.
    @Test func theQuotaIsReadFromTheCgroupFilesAndTheSmallestAncestorCounts() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("pool-width-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        func write(_ path: String, _ text: String) throws {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: url, atomically: true, encoding: .utf8)
        }
        try write("proc-v2", "0::/kubepods/pod1/app\n")
        try write("sys/kubepods/cpu.max", "100000 100000\n")  // the parent's is smaller: it counts
        try write("sys/kubepods/pod1/cpu.max", "150000 100000\n")
        try write("sys/kubepods/pod1/app/cpu.max", "max 100000\n")
        let sys = root.appendingPathComponent("sys").path
        #expect(SystemProcessors.cgroupQuota(root: sys, procSelfCgroup: root.appendingPathComponent("proc-v2").path) == 1)

        try write("proc-v1", "3:cpu,cpuacct:/docker/abc\n")
        try write("sys/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "250000\n")
        try write("sys/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n")
        #expect(SystemProcessors.cgroupQuota(root: sys, procSelfCgroup: root.appendingPathComponent("proc-v1").path) == 2.5)

        try write("proc-garbage", "\u{0}\u{1}garbage")
        #expect(SystemProcessors.cgroupQuota(root: sys, procSelfCgroup: root.appendingPathComponent("proc-garbage").path) == nil)
        #expect(SystemProcessors.cgroupQuota(root: sys, procSelfCgroup: root.appendingPathComponent("missing").path) == nil)
    }

    @Test func thisMachinesDefaultIsAtLeastOneAndAtMostItsProcessors() {
        let width = WorkerPool.defaultThreadCount
        #expect(width >= 1)
        if SystemProcessors.overrideValue() == nil {
            #expect(width <= SystemProcessors.allowedProcessorCount())
        }
    }

    /// Numbers too large to count or round (no kernel writes them, but the readers promise never
    /// to trap on what they read): malformed text or no limit, never an overflow trap.
    @Test func hugeNumbersAreMalformedOrNoLimitNeverATrap() {
        #expect(PoolWidth.allowedProcessors(procSelfStatus: "Cpus_allowed_list:\t0-9223372036854775807\n") == nil)
        #expect(
            PoolWidth.allowedProcessors(procSelfStatus: "Cpus_allowed_list:\t0-4611686018427387904,0-4611686018427387904\n")
                == nil)
        let v2 = PoolWidth.cgroupV2Quota(cpuMax: "9223372036854775807 1\n")
        #expect(PoolWidth.decide(processors: 4, quota: v2, override: nil).threads == 4)
        let v1 = PoolWidth.cgroupV1Quota(quota: "9223372036854775807\n", period: "1\n")
        #expect(PoolWidth.decide(processors: 4, quota: v1, override: nil).threads == 4)
        #expect(PoolWidth.decide(processors: 4, quota: .infinity, override: nil).threads == 4)
        #expect(PoolWidth.decide(processors: 4, quota: .nan, override: nil).threads == 4)
    }

    /// An override beyond `PoolWidth.maximumOverride` is a typo more likely than a wish (10 as
    /// 100000 would start 100,000 threads, or stop the server when they cannot start): ignored
    /// and named, as any other invalid value.
    @Test func anOverrideBeyondTheMaximumIsIgnoredAndNamed() {
        #expect(PoolWidth.decide(processors: 4, quota: nil, override: "\(PoolWidth.maximumOverride)").threads
            == PoolWidth.maximumOverride)
        for huge in ["\(PoolWidth.maximumOverride + 1)", "1000000"] {
            let decision = PoolWidth.decide(processors: 4, quota: nil, override: huge)
            #expect(decision.threads == 4 && decision.ignoredOverride == huge, "\(huge) was not ignored")
        }
    }
}
