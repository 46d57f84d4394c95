import Synchronization

/// An atomic value through which the runtime's threads hand something to each other without a
/// lock: a turn, a `next` slot, the `sync` door, a count another thread decides by.
///
/// Seam: in an ordinary build each operation is the `Atomic` operation itself. The wrapper holds
/// nothing but the `Atomic`, stays `~Copyable` storage inside its owner, and its operations are
/// `@_transparent` (inlined before optimization, so the caller's constant ordering reaches
/// `Atomic` as it must): the same instructions as a bare `Atomic`. In a simulation build, an
/// operation by a simulated thread is first a scheduling point (`SimulationKernel.atomicStep`),
/// so another thread may run between any two of them; then the real operation runs. Every other
/// thread runs the plain operation.
///
/// Only the operations the runtime uses exist here, with `Atomic`'s names and orderings.
/// `Atomic` defines its operations per storage width, so they are spelled once per width used.
///
/// For the runtime's own modules only: the services above SerialCore (timers, countdowns,
/// polling, requests) put their hand-off atomics through it too, with
/// `@_spi(SerialSeam) import SerialCore`. It is SPI rather than `package` because only a public
/// `@_transparent` body is serialized into the module and inlined at a call in another module
/// (a `package` one stays an out-of-line generic call, in debug and release builds alike), and
/// the constant ordering must reach `Atomic` at the call. Their builds do not define
/// `SERIAL_SIMULATION`; the `#if` below is decided when SerialCore compiles, and the inlined body
/// carries SerialCore's choice.
@_spi(SerialSeam)
public struct SeamAtomic<Value: AtomicRepresentable>: ~Copyable {
    @usableFromInline let value: Atomic<Value>
    #if SERIAL_SIMULATION
    /// This atomic's identity in a simulation run (see `SimulationKernel.atomicStep`).
    @usableFromInline let simulationTag = Atomic<Int>(0)
    #endif

    /// An atomic holding `initialValue`.
    @_transparent
    public init(_ initialValue: consuming Value) {
        self.value = Atomic(initialValue)
    }

    /// A scheduling point before operation `operation`, when the caller is a simulated thread.
    @_transparent
    @usableFromInline borrowing func step(_ operation: SeamAtomicOperation) {
        #if SERIAL_SIMULATION
        self.simulationStep(operation)
        #endif
    }

    #if SERIAL_SIMULATION
    /// Out of line: the simulation's bookkeeping stays in SerialCore, whichever module inlined
    /// the operation.
    @inline(never)
    @usableFromInline borrowing func simulationStep(_ operation: SeamAtomicOperation) {
        if let thread = SimulatedThread.current {
            thread.kernel.atomicStep(operation, on: self.simulationTag, by: thread)
        }
    }
    #endif
}

@_spi(SerialSeam) extension SeamAtomic: Sendable where Value: Sendable {}

/// The operations of `SeamAtomic`, as a simulation run's trace records them.
@usableFromInline enum SeamAtomicOperation: UInt64 {
    case load = 0x50
    case store
    case exchange
    case compareExchange
    case add
    case subtract
}

@_spi(SerialSeam) extension SeamAtomic where Value.AtomicRepresentation == _Atomic8BitStorage {
    /// `Atomic.load`, after a scheduling point in a simulation run.
    @_semantics("atomics.requires_constant_orderings")
    @_transparent
    public borrowing func load(ordering: AtomicLoadOrdering) -> Value {
        self.step(.load)
        return self.value.load(ordering: ordering)
    }

    /// `Atomic.store`, after a scheduling point in a simulation run.
    @_semantics("atomics.requires_constant_orderings")
    @_transparent
    public borrowing func store(_ desired: consuming Value, ordering: AtomicStoreOrdering) {
        self.step(.store)
        self.value.store(desired, ordering: ordering)
    }

    /// `Atomic.exchange`, after a scheduling point in a simulation run.
    @_semantics("atomics.requires_constant_orderings")
    @_transparent
    public borrowing func exchange(_ desired: consuming Value, ordering: AtomicUpdateOrdering) -> Value {
        self.step(.exchange)
        return self.value.exchange(desired, ordering: ordering)
    }

    /// `Atomic.compareExchange`, after a scheduling point in a simulation run.
    @_semantics("atomics.requires_constant_orderings")
    @_transparent
    public borrowing func compareExchange(
        expected: consuming Value, desired: consuming Value, ordering: AtomicUpdateOrdering
    ) -> (exchanged: Bool, original: Value) {
        self.step(.compareExchange)
        return self.value.compareExchange(expected: expected, desired: desired, ordering: ordering)
    }
}

@_spi(SerialSeam) extension SeamAtomic where Value.AtomicRepresentation == _Atomic64BitStorage {
    /// `Atomic.load`, after a scheduling point in a simulation run.
    @_semantics("atomics.requires_constant_orderings")
    @_transparent
    public borrowing func load(ordering: AtomicLoadOrdering) -> Value {
        self.step(.load)
        return self.value.load(ordering: ordering)
    }

    /// `Atomic.store`, after a scheduling point in a simulation run.
    @_semantics("atomics.requires_constant_orderings")
    @_transparent
    public borrowing func store(_ desired: consuming Value, ordering: AtomicStoreOrdering) {
        self.step(.store)
        self.value.store(desired, ordering: ordering)
    }

    /// `Atomic.exchange`, after a scheduling point in a simulation run.
    @_semantics("atomics.requires_constant_orderings")
    @_transparent
    public borrowing func exchange(_ desired: consuming Value, ordering: AtomicUpdateOrdering) -> Value {
        self.step(.exchange)
        return self.value.exchange(desired, ordering: ordering)
    }

    /// `Atomic.compareExchange`, after a scheduling point in a simulation run.
    @_semantics("atomics.requires_constant_orderings")
    @_transparent
    public borrowing func compareExchange(
        expected: consuming Value, desired: consuming Value, ordering: AtomicUpdateOrdering
    ) -> (exchanged: Bool, original: Value) {
        self.step(.compareExchange)
        return self.value.compareExchange(expected: expected, desired: desired, ordering: ordering)
    }
}

@_spi(SerialSeam) extension SeamAtomic where Value == Int {
    /// `Atomic.add`, after a scheduling point in a simulation run.
    @_semantics("atomics.requires_constant_orderings")
    @_transparent
    @discardableResult
    public borrowing func add(_ operand: Int, ordering: AtomicUpdateOrdering) -> (oldValue: Int, newValue: Int) {
        self.step(.add)
        return self.value.add(operand, ordering: ordering)
    }

    /// `Atomic.subtract`, after a scheduling point in a simulation run.
    @_semantics("atomics.requires_constant_orderings")
    @_transparent
    @discardableResult
    public borrowing func subtract(_ operand: Int, ordering: AtomicUpdateOrdering) -> (oldValue: Int, newValue: Int) {
        self.step(.subtract)
        return self.value.subtract(operand, ordering: ordering)
    }
}

#if SERIAL_SIMULATION
@_spi(SerialSeam) extension SeamAtomic where Value.AtomicRepresentation == _Atomic64BitStorage {
    /// The value, read without a scheduling point: for the simulator's invariant checks, which run
    /// under the kernel's lock while every other simulated thread is stopped (`SimulationInvariant`).
    borrowing func valueForInvariantCheck() -> Value {
        self.value.load(ordering: .sequentiallyConsistent)
    }
}
#endif
