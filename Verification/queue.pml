/*
 * The hand-off protocol of SerialQueue (Sources/SerialCore/SerialQueue), as a Promela model for spin.
 *
 * README.md in this folder maps every step below to the code it models ("step names" in the
 * comments, e.g. [W3]), states the assumptions (memory orderings, spurious wake-ups, how steps
 * are grouped), the properties and the mutants. verify.sh runs every check.
 *
 * Switches (spin -D...):
 *   END_DRAIN, END_CANCEL, END_RELEASE, END_NONE   how the queue's life ends (one of them; the
 *                                                   controller thread does it): shutdown(.drain),
 *                                                   shutdown(.cancelPending), release of the last
 *                                                   reference, or never (the worker sleeps forever).
 *   THREE_PRODUCERS                                 a third producer thread.
 *   LATE_HANDLER                                    P0 registers a shutdown handler after its calls.
 *   WATCHDOG                                        a stall watchdog thread watches the queue (and
 *                                                   each producer makes one call: P0 async 1, P1
 *                                                   sync 3).
 *   BOUNDED                                         maximumQueued = 1, and P0 makes two asyncs
 *                                                   (item 2 is async): async waits for room.
 *   SPURIOUS=n                                      spurious wake-ups available (default 1).
 *   CHECK_<PROPERTY>                                which assertions are compiled in (CHECK_ALL: all).
 *   MUTANT_<NAME>                                   one deliberate bug (see README.md).
 */

/* ------------------------------------------------------------------------------------------ */
/* The instance: producers' scripts. Items are numbered 1..NITEMS in no particular order.      */
/*   P0: async 1, then sync 2          P1: sync 3, then async 4          P2: sync 5             */
/* ------------------------------------------------------------------------------------------ */

#ifdef THREE_PRODUCERS
#define NPROD 3
#define NITEMS 5
#else
#define NPROD 2
#define NITEMS 4
#endif

#define ASYNC 0
#define SYNC 1
#ifdef BOUNDED
#define MAXQ 1                   /* QueueCore.maximumQueued */
#define kindOf(id) (((id) == 3 || (id) == 5) -> SYNC : ASYNC)
#else
#define kindOf(id) (((id) == 2 || (id) == 3 || (id) == 5) -> SYNC : ASYNC)
#endif
#define prodOf(id) (((id) <= 2) -> 0 : (((id) <= 4) -> 1 : 2))

#ifndef SPURIOUS
#define SPURIOUS 1
#endif

/* ------------------------------------------------------------------------------------------ */
/* Constants of the code                                                                       */
/* ------------------------------------------------------------------------------------------ */

/* QueueCore.FastPath: the door's states */
#define CLOSED 0
#define OPEN 1
#define HELD 2
#define HREC 3      /* heldAndRecorded */
/* QueueState.Owner */
#define O_NONE 0
#define O_WORKER 1
#define O_SYNC 2
/* QueueState.WorkerPhase */
#define RUNNING 0
#define SPINNING 1
#define SLEEPING 2
#define AWAITING 3  /* awaitingSyncReturn */
#define EXITED 4
/* QueueState.Lifecycle */
#define ACCEPTING 0
#define SHUT_DRAIN 1
#define SHUT_CANCEL 2
#define RELEASED 3
/* QueueState.WakeAction */
#define A_NONE 0
#define A_WAKE 1
#define A_NUDGE 2

/* Ghost: what happened to each item (for the properties only; no code reads it). */
#define S_NEW 0
#define S_ACCEPTED 1
#define S_RUNNING 2
#define S_DONE 3
#define S_DROPPED 4
#define S_REJECTED 5

/* ------------------------------------------------------------------------------------------ */
/* Shared variables                                                                            */
/* ------------------------------------------------------------------------------------------ */

/* Shared without the lock (atomics and condition variables). */
byte door = CLOSED;              /* QueueCore.fastPath */
bool nudged = false;             /* QueueCore.spinningWorkerNudged */
bool interrupted = false;        /* QueueCore.interrupted */
/* A condition variable with one possible waiter: true while that waiter waits and is not yet
 * signalled. signal() sets it false; with no waiter it is false already (the signal is lost,
 * as with pthreads). */
bool workAvailableWaits = false;     /* QueueCore.workAvailable (only the worker waits on it) */
bool workerExitedWaits = false;      /* QueueCore.workerExited (the shutdown caller) */
bool turnGrantedWaits[NPROD];        /* CurrentQueueStack.turnGranted, one per producer thread */
byte spurious = SPURIOUS;            /* spurious wake-ups the environment may still deliver */
#ifdef BOUNDED
bool roomWaits[NPROD];               /* QueueCore.roomAvailable: several waiters, broadcast */
#endif

/* The mutex: 0 when free, else the holder's _pid + 1. */
byte mutex = 0;

/* Guarded by the mutex: QueueState, CurrentQueueStack.isTurnGranted. */
typedef Ring { byte it[NITEMS]; byte n };
Ring fifo;                       /* QueueState.fifo */
Ring batch;                      /* the worker's local spare ring (global so d_steps reach it) */
byte owner = O_NONE;
byte phase = RUNNING;
bool wakePending = false;
byte suspendCount = 0;
byte lifecycle = ACCEPTING;
byte cancelledWork = 0;
bool threadReclaimed = false;
bool turnGranted[NPROD];         /* CurrentQueueStack.isTurnGranted */
/* QueueState.shutdownHandlers (ShutdownHandlers): the handlers kept (a bit per handler) and
 * isFired. Handler 1 was registered before the threads start; with LATE_HANDLER, P0 registers
 * handler 2 after its calls (before or after they fire). */
byte handlersKept = 1;
bool handlersFired = false;
#ifdef BOUNDED
byte roomWaiters = 0;            /* QueueState.roomWaiters */
#endif
#ifdef WATCHDOG
bool armed = false;              /* !QueueState.armedWatchdogs.isEmpty; one watchdog modelled: each of
                                  * several is armed, taken and woken on its own by the same steps */
#endif

#ifdef WATCHDOG
/* StallWatchdog.Core: its own mutex (0 free, else holder's _pid + 1), guarding isAsleep and
 * sawWork; its condition wakeUp has one waiter, the watchdog thread. */
byte wdMutex = 0;
bool wdAsleep = false;
bool wdSawWork = false;
bool wdWakeWaits = false;
byte wdOwed = 0;                 /* ghost: armed watchdogs taken, queueBecameBusy not yet called */
#endif

/* The worker thread has returned (what join waits for). */
bool workerEnded = false;

/* Ghost state for the properties. */
byte st[NITEMS + 1];             /* S_* per item */
byte seq[NITEMS + 1];            /* position in the order the calls entered the queue */
byte nextSeq = 1;
byte lastSeq = 0;                /* seq of the last body that started */
byte running = 0;                /* bodies running now */
byte nAccepted = 0;
byte nFinished = 0;              /* ran to the end, or dropped by shutdown(.cancelPending) */
byte producersDone = 0;
bool controllerDone = false;
#define NHANDLERS 2
bool handlerAdded[NHANDLERS + 1];  /* kept by the queue (whenShutDown returned a subscription):
                                   * handler 1 always, handler 2 when P0 registered it in time */
byte handlerRuns[NHANDLERS + 1];   /* times it ran */

hidden byte ti;                  /* loop indices inside d_steps */
hidden byte tj;
hidden byte passedTo;            /* the item passToNextSyncCaller hands over */
hidden byte droppable;           /* named so that spin's reports read as sentences */
hidden byte settled;
hidden byte reported;
hidden byte drained;
hidden byte handled;
hidden byte once;
hidden byte withinBound;
hidden byte accepting;
hidden byte watched;

/* ------------------------------------------------------------------------------------------ */
/* Properties as assertions; each group can be compiled alone (verify.sh does for mutants).    */
/* ------------------------------------------------------------------------------------------ */

#ifdef CHECK_ALL
#define CHECK_EXCLUSION
#define CHECK_ORDER
#define CHECK_ONCE
#define CHECK_NOTHING_LOST
#define CHECK_CODE_INVARIANTS
#define CHECK_HANDLERS
#define CHECK_BOUND
#define CHECK_WATCHDOG
#endif

#ifdef CHECK_EXCLUSION
#define assertExclusion(e) assert(e)
#else
#define assertExclusion(e) skip
#endif
#ifdef CHECK_ORDER
#define assertOrder(e) assert(e)
#else
#define assertOrder(e) skip
#endif
#ifdef CHECK_ONCE
#define assertOnce(e) assert(e)
#else
#define assertOnce(e) skip
#endif
#ifdef CHECK_NOTHING_LOST
#define assertNothingLost(e) assert(e)
#else
#define assertNothingLost(e) skip
#endif
#ifdef CHECK_CODE_INVARIANTS
#define assertCodeInvariant(e) assert(e)
#else
#define assertCodeInvariant(e) skip
#endif
#ifdef CHECK_HANDLERS
#define assertHandlers(e) assert(e)
#else
#define assertHandlers(e) skip
#endif
#ifdef CHECK_BOUND
#define assertBound(e) assert(e)
#else
#define assertBound(e) skip
#endif
#ifdef CHECK_WATCHDOG
#define assertWatchdog(e) assert(e)
#else
#define assertWatchdog(e) skip
#endif

/* Probes: -DPROBE=k turns scenario k into a failing assertion, so that spin shows the scenario
 * is reachable (a property that holds because its scenario never happens proves nothing).
 * verify.sh lists the scenarios. */
#ifdef PROBE
#define reached(k) assert(PROBE != (k))
#define reachedIf(c, k) if :: (c) -> assert(PROBE != (k)) :: else -> skip fi
#else
#define reached(k) skip
#define reachedIf(c, k) skip
#endif

/* ------------------------------------------------------------------------------------------ */
/* Liveness (checked with pan -a -f: weak fairness)                                            */
/* ------------------------------------------------------------------------------------------ */

/* No lost wake-up: every accepted item eventually runs (or is dropped by a cancelling shutdown,
 * which reports it). With finitely many items this is "infinitely often nothing is pending". */
ltl everyAcceptedItemRuns { [] <> (nAccepted == nFinished) }
/* Every call returns: each producer's calls and the controller's. */
ltl everyCallReturns { <> (producersDone == NPROD && controllerDone) }

/* ------------------------------------------------------------------------------------------ */
/* QueueState: derived properties (SerialQueue.State.swift)                                    */
/* ------------------------------------------------------------------------------------------ */

#define isAccepting (lifecycle == ACCEPTING)
#define isSuspended (suspendCount > 0 && lifecycle == ACCEPTING)
#ifdef MUTANT_IDLE_IGNORES_FIFO
#define isIdle (owner == O_NONE && !isSuspended && isAccepting \
    && (phase == SLEEPING || phase == SPINNING) && !wakePending)
#else
#define isIdle (owner == O_NONE && fifo.n == 0 && !isSuspended && isAccepting \
    && (phase == SLEEPING || phase == SPINNING) && !wakePending)
#endif
/* QueueState.mayOpenDoor: idle, and no sleeping watchdog to wake (its wake-up goes through the
 * lock). */
#if defined(WATCHDOG) && !defined(MUTANT_DOOR_IGNORES_WATCHDOG)
#define mayOpenDoor (isIdle && !armed)
#else
#define mayOpenDoor isIdle
#endif
#define mayStartSpinning (owner == O_NONE && fifo.n == 0 && !isSuspended && isAccepting)
#ifdef MUTANT_EXIT_WHILE_OWNED
#define workerShouldExit (!isAccepting && fifo.n == 0)
#elif defined(VARIANT_EXIT_IGNORES_FIFO)
#define workerShouldExit (!isAccepting && owner == O_NONE)
#else
#define workerShouldExit (!isAccepting && fifo.n == 0 && owner == O_NONE)
#endif

/* QueueState.checkInvariants: the code's own debug assertions, checked where it checks them. */
inline checkInvariants() {
    assertCodeInvariant(!wakePending || phase == SLEEPING);
    assertCodeInvariant(phase != AWAITING || owner != O_NONE);
    assertCodeInvariant(phase != EXITED || (fifo.n == 0 && !isAccepting));
    assertCodeInvariant(!(phase == SLEEPING && owner == O_NONE && fifo.n > 0 && !isSuspended && !wakePending))
}

/* QueueState.wakeWorkerIfNeeded -> a */
inline wakeWorkerIfNeeded(a) {
    if
    :: ((phase == SLEEPING || phase == SPINNING) && !wakePending && owner == O_NONE
        && ((fifo.n > 0 && !isSuspended) || workerShouldExit)) ->
        if
        :: phase == SPINNING -> a = A_NUDGE
        :: else -> wakePending = true; a = A_WAKE
        fi
    :: else -> a = A_NONE
    fi
}

/* Ghost: the call entered the queue (its linearization point). */
inline accept(id) {
    st[id] = S_ACCEPTED; seq[id] = nextSeq; nextSeq++; nAccepted++
}

/* QueueState.submit (the append, then the wake decision) -> a */
inline submit(id, a) {
    accepting = isAccepting;     /* nothing joins a queue that stopped accepting */
    assertBound(accepting);
#ifdef MUTANT_WAKE_BEFORE_APPEND
    wakeWorkerIfNeeded(a);
    fifo.it[fifo.n] = id; fifo.n++; accept(id)
#else
    fifo.it[fifo.n] = id; fifo.n++; accept(id);
    wakeWorkerIfNeeded(a)
#endif
}

/* QueueState.takeBatch's swap(&fifo, &batch), batch being empty: the batch gets the FIFO's
 * items and the FIFO is left empty. */
inline takeAll() {
    assertCodeInvariant(batch.n == 0);
    ti = 0;
    do
    :: ti < fifo.n ->
        batch.it[ti] = fifo.it[ti];
#ifndef MUTANT_BATCH_COPY
        fifo.it[ti] = 0;
#endif
        ti++
    :: else -> break
    od;
    batch.n = fifo.n;
#ifndef MUTANT_BATCH_COPY
    fifo.n = 0;
#endif
    ti = 0
}

/* RingBuffer.popFirst on the batch -> id */
inline popBatch(id) {
    id = batch.it[0];
    ti = 1;
    do
    :: ti < batch.n -> batch.it[ti - 1] = batch.it[ti]; ti++
    :: else -> break
    od;
    batch.n--; batch.it[batch.n] = 0; ti = 0
}

/* QueueState.returnUnrun: the batch's rest goes back in front of the FIFO, in its order. */
inline returnUnrunToFifo() {
#ifdef MUTANT_UNRUN_TO_BACK
    /* the rest behind newer work */
    ti = 0;
    do
    :: ti < batch.n -> fifo.it[fifo.n + ti] = batch.it[ti]; batch.it[ti] = 0; ti++
    :: else -> break
    od;
#else
    ti = fifo.n;
    do
    :: ti > 0 -> ti--; fifo.it[ti + batch.n] = fifo.it[ti]
    :: else -> break
    od;
    ti = 0;
    do
    :: ti < batch.n -> fifo.it[ti] = batch.it[ti]; batch.it[ti] = 0; ti++
    :: else -> break
    od;
#endif
    fifo.n = fifo.n + batch.n; batch.n = 0; ti = 0
}

/* Ghost: shutdown(.cancelPending) drops item `id` (counted in cancelledWork). */
inline drop(id) {
    assertOnce(st[id] == S_ACCEPTED);
    droppable = (kindOf(id) == ASYNC && lifecycle == SHUT_CANCEL);
    assertNothingLost(droppable);
    st[id] = S_DROPPED; nFinished++; reached(9);
#ifndef MUTANT_DROP_UNCOUNTED
    cancelledWork++
#else
    skip
#endif
}

/* QueueState.removeCancellableWork: drops async work, keeps sync turns (and jobs). */
inline removeCancellableWork() {
    ti = 0; tj = 0;
    do
    :: ti < fifo.n ->
#ifdef MUTANT_CANCEL_DROPS_SYNC
        drop(fifo.it[ti]);
#else
        if
        :: kindOf(fifo.it[ti]) == ASYNC -> drop(fifo.it[ti])
        :: else -> fifo.it[tj] = fifo.it[ti]; tj++
        fi;
#endif
        ti++
    :: else -> break
    od;
    ti = tj;
    do
    :: ti < fifo.n -> fifo.it[ti] = 0; ti++
    :: else -> break
    od;
    fifo.n = tj; ti = 0; tj = 0
}

/* Ghost: the shutdown handlers whose bits are in `bits` run (Scheduling.whenShutDown). Each must
 * run once, after every accepted item ran or was dropped. */
inline runHandlers(bits) {
    d_step {
        tj = 1;
        do
        :: tj <= NHANDLERS ->
            if
            :: (bits >> (tj - 1)) & 1 ->
                once = (handlerRuns[tj] == 0);
                assertHandlers(once);
                drained = true;
                ti = 1;
                do
                :: ti <= NITEMS ->
                    if
                    :: st[ti] == S_ACCEPTED || st[ti] == S_RUNNING -> drained = false
                    :: else -> skip
                    fi;
                    ti++
                :: else -> break
                od;
                assertHandlers(drained);
                handlerRuns[tj]++
            :: else -> skip
            fi;
            tj++
        :: else -> break
        od;
        ti = 0; tj = 0
    }
}

/* ------------------------------------------------------------------------------------------ */
/* The mutex, the door, condition variables (QueueCore.swift, System/)                         */
/* ------------------------------------------------------------------------------------------ */

/* Each step below touches at most one variable shared without the lock (README: "Steps"). */

#define LOCK        mutex == 0 -> mutex = _pid + 1
#define UNLOCK      assert(mutex == _pid + 1); mutex = 0

/* closeFastPath: the load-then-compare-and-swap loop as one step on the door's current value
 * (a failed compare-and-swap only retries). */
inline closeFastPath() {
    if
    :: door == OPEN -> door = CLOSED
#ifdef MUTANT_CLOSE_IGNORES_HELD
    :: door == HELD -> skip
#else
    :: door == HELD -> door = HREC; owner = O_SYNC; reached(2)
#endif
    :: else -> skip
    fi
}

/* lockState: mutex.lock(), then closeFastPath(). */
#define LOCK_STATE  LOCK; closeFastPath()

/* unlockState: checkInvariants(), then mutex.unlock(). */
#define UNLOCK_STATE checkInvariants(); UNLOCK

/* openFastPathIfIdle: a releasing store, only when idle. */
inline openFastPathIfIdle() {
    if
    :: mayOpenDoor -> door = OPEN
    :: else -> skip
    fi
}

/* pthread_cond_wait, first half: atomically release the mutex and start waiting on `w`.
 * The environment may decide now that this wait will end spuriously (at any later moment). */
#ifdef SPURIOUS_UNBOUNDED
#define WAIT_RELEASING(w) \
    mutex = 0; w = true; \
    if \
    :: w = false; reached(7) \
    :: true -> skip \
    fi
#else
#define WAIT_RELEASING(w) \
    mutex = 0; w = true; \
    if \
    :: spurious > 0 -> spurious--; w = false; reached(7) \
    :: true -> skip \
    fi
#endif

/* QueueCore.perform: the wake decision carried out (after unlocking, except where noted). */
inline perform(a) {
    atomic {
        if
        :: a == A_WAKE -> workAvailableWaits = false; reached(6)      /* workAvailable.signal() */
#ifndef VARIANT_NO_NUDGE
        :: a == A_NUDGE -> nudged = true; reached(5)                  /* a releasing store */
#endif
        :: else -> skip
        fi;
        a = A_NONE
    }
}

#ifdef BOUNDED
/* roomAvailable.broadcast(): every waiter is released. */
#if NPROD == 3
#define BROADCAST_ROOM  atomic { roomWaits[0] = false; roomWaits[1] = false; roomWaits[2] = false }
#else
#define BROADCAST_ROOM  atomic { roomWaits[0] = false; roomWaits[1] = false }
#endif
#endif

#ifdef WATCHDOG
/* QueueState.takeArmedWatchdog, under the queue's lock: `wd` is the thread's local. */
inline takeArmedWatchdog() {
    if
    :: armed -> armed = false; wd = true; wdOwed++
    :: else -> skip
    fi
}

/* After unlocking: watchdog?.queueBecameBusy() (Core.mutex.withLock: sawWork, wakeIfAsleep). */
inline queueBecameBusy() {
    if
    :: wd ->
        atomic {
            wdMutex == 0 ->
            wdSawWork = true;
            if
            :: wdAsleep -> wdAsleep = false; wdWakeWaits = false; reached(25)   /* signal */
            :: else -> skip
            fi;
            wdOwed--; wd = false
        }
    :: else -> skip
    fi
}
#endif

/* ------------------------------------------------------------------------------------------ */
/* Bodies (ghost)                                                                              */
/* ------------------------------------------------------------------------------------------ */

inline bodyStarts(id) {
    atomic {
#ifdef WATCHDOG
        /* the watchdog never sleeps through the queue getting busy: a body that starts while
         * it is asleep took it from the queue (its queueBecameBusy is on the way) */
        watched = (!wdAsleep || wdOwed > 0);
        assertWatchdog(watched);
        reachedIf(wdAsleep, 24);
#endif
        assertExclusion(running == 0);
        assertOnce(st[id] == S_ACCEPTED);
        assertOrder(seq[id] > lastSeq);
        running++; st[id] = S_RUNNING; lastSeq = seq[id]
    }
}

inline bodyEnds(id) {
    atomic { running--; st[id] = S_DONE; nFinished++ }
}

/* ------------------------------------------------------------------------------------------ */
/* The worker (QueueCore.workerMain and what it calls)                                         */
/* ------------------------------------------------------------------------------------------ */

active proctype Worker() {
    bool ran = false;            /* ranSinceSleeping */
    byte id = 0;
    byte w;
    byte taken = 0;              /* the shutdown handlers it took */
    bool roomWake = false;
#ifdef WATCHDOG
    bool wd = false;
#endif

    atomic { LOCK_STATE };                                                /* [W1] */
    do
    :: atomic {                                                           /* [W2] takeBatch */
        owner == O_NONE && !isSuspended && fifo.n > 0 ->
        reachedIf(fifo.n >= 2, 13);
        owner = O_WORKER; takeAll();
        interrupted = false;
#if defined(BOUNDED) && !defined(VARIANT_ROOM_WAKE_AT_FINISH) && !defined(MUTANT_ROOM_NO_WORKER_BROADCAST)
        roomWake = (roomWaiters > 0);
#endif
#ifdef WATCHDOG
        takeArmedWatchdog();     /* delayed work (not modelled) wakes them as it falls due, under the
                                  * lock (QueueCore.moveDueDelayedWork; scenario
                                  * stall-due-work-busy-pool-reported): never armed here */
#endif
        UNLOCK_STATE
       };
#ifdef BOUNDED
        if
        :: roomWake -> BROADCAST_ROOM; roomWake = false; reached(23)         /* [W2b] */
        :: else -> skip
        fi;
#endif
#ifdef WATCHDOG
        queueBecameBusy();
#endif
        /* run(&batch), outside the lock */
        do
        :: batch.n == 0 -> break
        :: else ->
            if
            :: interrupted ->                                             /* [W3] the relaxed load sees it */
                /* returnUnrun */
                atomic { LOCK_STATE };                                    /* [W4] */
                atomic {                                                  /* [W5] */
                    reachedIf(batch.n >= 2, 8);
                    reachedIf(lifecycle == SHUT_CANCEL, 17);
                    interrupted = false;
                    returnUnrunToFifo();
                    if
                    :: lifecycle == SHUT_CANCEL -> removeCancellableWork()
                    :: else -> skip
                    fi;
                    UNLOCK_STATE
                };
                break
            :: true ->                                                    /* [W3] ... or not (yet) */
                d_step { popBatch(id) };
                if
                :: kindOf(id) == ASYNC ->                                 /* [W6] the async body */
                    bodyStarts(id); bodyEnds(id)
                :: else ->                                                /* handOff(to:) */
                    w = prodOf(id);
                    atomic { LOCK_STATE };                                /* [H1] */
                    atomic {                                              /* [H2] */
                        owner = O_SYNC; phase = AWAITING; turnGranted[w] = true;
                        turnGrantedWaits[w] = false;                      /* signal, under the lock */
                        reached(4)
                    };
                    do
                    :: atomic { owner == O_SYNC -> WAIT_RELEASING(workAvailableWaits) };   /* [H3] */
                        !workAvailableWaits;
                        atomic { LOCK }
                    :: else -> break
                    od;
                    atomic { phase = RUNNING; UNLOCK_STATE };             /* [H4] */
                    w = 0
                fi;
                id = 0
            fi
        od;
        atomic { LOCK_STATE; owner = O_NONE; ran = true }                 /* [W7] */
#ifdef VARIANT_ROOM_WAKE_AT_FINISH
        /* the broadcast when a batch ends, instead of after the next one is taken */
        if
        :: roomWaiters > 0 -> BROADCAST_ROOM
        :: else -> skip
        fi
#endif
    :: else ->
        if
        :: workerShouldExit ->
#ifdef MUTANT_EXIT_WITHOUT_HANDLERS
            break
#else
            /* runShutdownHandlers: takeShutdownHandlers (takeAll marks them fired) */
            if
            :: !handlersFired && handlersKept != 0 ->
                atomic {                                                  /* [E1] */
                    handlersFired = true; taken = handlersKept; handlersKept = 0;
                    reached(18);
                    UNLOCK_STATE
                };
                runHandlers(taken);                                       /* [E2] */
                taken = 0;
                atomic { LOCK_STATE }                                     /* [E3] then look again */
            :: else -> handlersFired = true; break
            fi
#endif
        :: else ->
            if
            :: ran ->
                ran = false;
                /* spinBeforeSleeping */
                if
                :: mayStartSpinning ->
                    atomic { phase = SPINNING; nudged = false };          /* [S1] */
                    atomic { openFastPathIfIdle(); UNLOCK_STATE };        /* [S2] */
                    /* [S3] watch `nudged` until it is set or the deadline passes: a window of
                     * any length, in which every other thread may act */
#ifdef MUTANT_SPIN_THEN_SLEEP
                    /* the first spin: only a nudge it saw sends it back to look at the FIFO */
                    if
                    :: nudged -> atomic { LOCK_STATE; phase = RUNNING }
                    :: true -> atomic { LOCK_STATE; phase = RUNNING; ran = false }; goto sleep
                    fi
#else
                    atomic { LOCK_STATE; phase = RUNNING }                /* [S4] */
#endif
                :: else -> skip
                fi
            :: else ->
sleep:          /* blockingWaitForWork */
                atomic { phase = SLEEPING; openFastPathIfIdle() };      /* [B1] */
                atomic { checkInvariants(); WAIT_RELEASING(workAvailableWaits) };      /* [B2] */
end_sleeping:   !workAvailableWaits;                                    /* [B3] */
#ifdef MUTANT_KEEP_WAKE_PENDING
                atomic { LOCK_STATE; phase = RUNNING }
#else
                atomic { LOCK_STATE; phase = RUNNING; wakePending = false }      /* [B4] */
#endif
            fi
        fi
    od;
    atomic { phase = EXITED; workerExitedWaits = false; reached(14); UNLOCK_STATE };  /* [W8] broadcast */
    workerEnded = true
}

/* ------------------------------------------------------------------------------------------ */
/* Producers (SerialQueue.async / tryAsync -> QueueCore.submit; SerialQueue.sync)              */
/* ------------------------------------------------------------------------------------------ */

/* The admission under the lock: rejected if shut down, else appended. */
inline admit(id, a, checked, waited) {
    if
    :: !checked && !isAccepting -> st[id] = S_REJECTED; reachedIf(waited, 22)
    :: else ->
#ifdef BOUNDED
        withinBound = (fifo.n < MAXQ);
        reachedIf(waited, 21);
#endif
        submit(id, a);
#ifdef WATCHDOG
        takeArmedWatchdog();
#endif
#ifdef BOUNDED
        assertBound(withinBound)      /* the bound held when it was admitted */
#else
        skip
#endif
    fi;
    UNLOCK_STATE
}

/* tryAsync (async traps instead of returning false; the protocol is the same). With BOUNDED it
 * is `async` (QueueCore.submit(bounded: true)), which waits for room (waitForRoom), and the
 * rejection stands for its trap on a shut-down queue. */
inline asyncCall(id, p, a, waited) {
    atomic {                                                              /* [A1] */
        LOCK_STATE;
#ifdef BOUNDED
#ifdef MUTANT_ROOM_CHECK_BEFORE_WAIT
        if
        :: !isAccepting -> st[id] = S_REJECTED; UNLOCK_STATE
        :: else -> skip
        fi;
#endif
        if
        :: st[id] == S_REJECTED -> skip
        :: fifo.n >= MAXQ -> roomWaiters++; waited = true; reached(20)    /* beginWaitingForRoom */
        :: else -> admit(id, a, false, waited)
        fi
#else
        admit(id, a, false, waited)
#endif
    };
#ifdef BOUNDED
    if
    :: waited ->
        /* while isAccepting && fifo.count >= maximumQueued { roomAvailable.wait; closeFastPath } */
#ifdef MUTANT_ROOM_WAIT_IF
        if
#else
        do
#endif
        :: atomic { isAccepting && fifo.n >= MAXQ -> WAIT_RELEASING(roomWaits[p]) };  /* [F1] */
            !roomWaits[p];
#ifdef MUTANT_ROOM_WAKE_KEEPS_DOOR
            atomic { LOCK }
#else
            atomic { LOCK_STATE }                                         /* [F2] */
#endif
#ifdef MUTANT_ROOM_WAIT_IF
        :: else -> skip
        fi;
#else
        :: else -> break
        od;
#endif
        atomic {                                                          /* [F3] */
            roomWaiters--;                                                /* endWaitingForRoom */
#ifdef MUTANT_ROOM_CHECK_BEFORE_WAIT
            admit(id, a, true, waited)
#else
            admit(id, a, false, waited)
#endif
        };
        waited = false
    :: else -> skip
    fi;
#endif
    perform(a)                                                            /* [A2] */
#ifdef WATCHDOG
    ; queueBecameBusy()                                                   /* [A3] */
#endif
}

/* QueueState.passToNextSyncCaller, under the lock: a returning sync body whose FIFO has another
 * caller's turn next passes the queue straight to it (the owner stays O_SYNC), as the worker's
 * handOff would; not while suspended, nor while the worker awaits this body's return with the
 * rest of its batch. (Its counters are not modelled.) */
#ifdef MUTANT_PASS_AHEAD_OF_BATCH
#define mayPassToNextSyncCaller (fifo.n > 0 && kindOf(fifo.it[0]) == SYNC && !isSuspended)
#else
#define mayPassToNextSyncCaller (fifo.n > 0 && kindOf(fifo.it[0]) == SYNC && !isSuspended && phase != AWAITING)
#endif
inline passToNextSyncCaller() {
    passedTo = fifo.it[0];
    ti = 1;
    do
    :: ti < fifo.n -> fifo.it[ti - 1] = fifo.it[ti]; ti++
    :: else -> break
    od;
    fifo.n--; fifo.it[fifo.n] = 0; ti = 0;
    turnGranted[prodOf(passedTo)] = true;
#ifndef MUTANT_PASS_NO_SIGNAL
    turnGrantedWaits[prodOf(passedTo)] = false;                           /* signal, under the lock */
#endif
    passedTo = 0;
    reached(26)
}

inline syncCall(id, p, via, left, a) {
    /* enterSync: one acquiring compare-and-swap open -> held */
    atomic {                                                              /* [Y1] */
        if
        :: door == OPEN -> door = HELD; accept(id); via = true; reached(1); reachedIf(phase == SPINNING, 15)
        :: else -> via = false
        fi
    };
    if
    :: !via ->
        /* enterSyncThroughTheLock */
        atomic { LOCK_STATE };                                            /* [Y2] */
        if
        :: atomic { !isAccepting -> st[id] = S_REJECTED; reached(12); UNLOCK_STATE }  /* (sync traps) */
        :: atomic { isAccepting && owner == O_NONE && fifo.n == 0 && !isSuspended ->   /* [Y3] tryEnterSync */
                owner = O_SYNC; accept(id); reached(16);
#ifdef WATCHDOG
                takeArmedWatchdog();
#endif
                UNLOCK_STATE }
#ifdef WATCHDOG
            ; queueBecameBusy()
#endif
        :: else ->
            atomic {                                                      /* [Y4] */
                turnGranted[p] = false; submit(id, a);
                /* perform, under the lock here */
                if
                :: a == A_WAKE -> workAvailableWaits = false
                :: a == A_NUDGE -> nudged = true
                :: else -> skip
                fi;
                a = A_NONE;
#if defined(WATCHDOG) && defined(CHECK_WATCHDOG_QUEUED)
                /* stricter, not in CHECK_ALL (README, "Found"): no item waits in the FIFO
                 * unseen by a sleeping watchdog. submitSyncTurn does not take it. */
                watched = (!wdAsleep || wdOwed > 0);
                assert(watched)
#else
                skip
#endif
            };
#ifdef MUTANT_TURN_WAIT_IF
            if
#else
            do
#endif
            :: atomic { !turnGranted[p] -> WAIT_RELEASING(turnGrantedWaits[p]) };    /* [Y5] */
                !turnGrantedWaits[p];
                atomic { LOCK }
#ifdef MUTANT_TURN_WAIT_IF
            :: else -> skip
            fi;
#else
            :: else -> break
            od;
#endif
            atomic { UNLOCK_STATE }                                       /* [Y6] */
        fi
    :: else -> skip
    fi;
    if
    :: st[id] == S_REJECTED -> skip
    :: else ->
        bodyStarts(id); bodyEnds(id);                                     /* [Y7] the body */
        /* leaveSync */
        atomic {                                                          /* [L1] releasing CAS held -> open */
            if
#ifdef MUTANT_LEAVE_BLINDLY
            :: via -> door = OPEN; left = true
#else
            :: via && door == HELD -> door = OPEN; left = true
#endif
            :: else -> left = false
            fi
        };
        if
        :: !left ->
            /* leaveSyncThroughTheLock */
            atomic {                                                      /* [L2] */
                LOCK;
                if
                :: via -> assertCodeInvariant(door == HREC); door = CLOSED; reached(3)
                :: else -> closeFastPath()
                fi
            };
            atomic {                                                      /* [L3] */
                assertCodeInvariant(owner == O_SYNC);
                if
                :: mayPassToNextSyncCaller -> passToNextSyncCaller()      /* [L3p] */
                :: else ->
                    /* QueueState.leaveSync */
                    if
                    :: phase == AWAITING ->
                        owner = O_WORKER;
#ifdef MUTANT_LEAVE_NO_WAKE
                        a = A_NONE
#else
                        a = A_WAKE
#endif
                    :: else -> owner = O_NONE; wakeWorkerIfNeeded(a)
                    fi;
                    openFastPathIfIdle()
                fi;
                UNLOCK_STATE
            };
            perform(a)                                                    /* [L4] */
        :: else -> skip
        fi
    fi;
    via = false; left = false
}

/* Scheduling.whenShutDown: handler h kept under the mutex (mutex.withLock: no door, no
 * invariant check), or run at once on the caller's thread if the handlers already fired. */
inline whenShutDown(h, now) {
    atomic {                                                              /* [K1] */
        LOCK;
        if
        :: handlersFired -> now = true
        :: else -> handlersKept = handlersKept | (1 << (h - 1)); handlerAdded[h] = true
        fi;
        UNLOCK
    };
    if
    :: now -> reached(19); runHandlers(1 << (h - 1)); now = false         /* [K2] */
    :: else -> skip
    fi
}

#ifdef WATCHDOG
#define WD_LOCAL bool wd = false;
#else
#define WD_LOCAL
#endif

active proctype P0() {
    bool via = false; bool left = false; byte a = A_NONE; WD_LOCAL
    asyncCall(1, 0, a, via);
#ifdef BOUNDED
    asyncCall(2, 0, a, via);
#elif !defined(WATCHDOG)   /* with the watchdog: one call per producer (states) */
    syncCall(2, 0, via, left, a);
#endif
#ifdef LATE_HANDLER
    whenShutDown(2, via);    /* after its calls: before or after the handlers fire */
#endif
    producersDone++
}

active proctype P1() {
    bool via = false; bool left = false; byte a = A_NONE; WD_LOCAL
    syncCall(3, 1, via, left, a);
#ifndef WATCHDOG
    asyncCall(4, 1, a, via);
#endif
    producersDone++
}

#ifdef THREE_PRODUCERS
active proctype P2() {
    bool via = false; bool left = false; byte a = A_NONE; WD_LOCAL
    syncCall(5, 2, via, left, a);
    producersDone++
}
#endif

/* ------------------------------------------------------------------------------------------ */
/* The controller: suspend/resume (SerialQueue+Suspension.swift), then the end of the queue's   */
/* life (SerialQueue+Lifecycle.swift)                                                          */
/* ------------------------------------------------------------------------------------------ */

inline suspend() {
    atomic { LOCK_STATE; suspendCount++ };                                /* [C1] */
    atomic { interrupted = true; UNLOCK_STATE }                           /* [C2] */
}

inline resume(a) {
    atomic { LOCK_STATE };                                                /* [C3] */
    atomic {                                                              /* [C4] */
        assert(suspendCount > 0);
        suspendCount--;
        wakeWorkerIfNeeded(a);   /* QueueState.resume, with no delayed work */
        openFastPathIfIdle();
        UNLOCK_STATE
    };
    perform(a)                                                            /* [C5] */
}

/* The property "nothing accepted is dropped by shutdown", checked when shutdown (or the release)
 * has returned: every accepted item ran to the end, or (cancelPending, async only) was dropped
 * and counted. */
inline checkNothingLost() {
    d_step {
        ti = 1; tj = 0;
        do
        :: ti <= NITEMS ->
            settled = (st[ti] != S_ACCEPTED && st[ti] != S_RUNNING);
            assertNothingLost(settled);
            if
            :: st[ti] == S_DROPPED -> tj++
            :: else -> skip
            fi;
            ti++
        :: else -> break
        od;
        reported = (tj == cancelledWork);   /* ShutdownReport.cancelledWork counts every drop */
        assertNothingLost(reported);
        /* every handler the queue kept has run, once, before shutdown (or the release) returns */
        ti = 1;
        do
        :: ti <= NHANDLERS ->
            handled = ((ti != 1 && !handlerAdded[ti]) || handlerRuns[ti] == 1);
            assertHandlers(handled);
            ti++
        :: else -> break
        od;
        ti = 0; tj = 0
    }
}

/* waitForWorkerExit, then join */
inline waitForWorkerExit() {
    atomic { LOCK };                                                      /* [X1] mutex.lock() */
    do
    :: atomic { phase != EXITED -> WAIT_RELEASING(workerExitedWaits) };   /* [X2] */
        !workerExitedWaits;
        atomic { LOCK }
    :: else -> break
    od;
    atomic { threadReclaimed = true; UNLOCK_STATE };                      /* [X3] */
    workerEnded                                                           /* [X4] join */
}

inline shutdown(mode, a) {
    atomic { LOCK_STATE };                                                /* [D1] */
#ifdef BOUNDED
    roomWake = false;
#endif
    if
    :: atomic { !isAccepting -> UNLOCK_STATE }
    :: else ->
        atomic {                                                          /* [D2] */
            reachedIf(fifo.n > 0 && kindOf(fifo.it[fifo.n - 1]) == SYNC, 10);
            reachedIf(door == HREC, 11);
            lifecycle = mode;
            if
            :: mode == SHUT_CANCEL -> removeCancellableWork(); interrupted = true
            :: else -> skip
            fi;
            wakeWorkerIfNeeded(a);
#if defined(BOUNDED) && !defined(MUTANT_ROOM_SHUTDOWN_NO_BROADCAST)
            roomWake = (roomWaiters > 0);
#endif
#ifdef MUTANT_HANDLERS_IN_SHUTDOWN
            /* shutdown takes the handlers itself */
            handlersFired = true; taken = handlersKept; handlersKept = 0;
#endif
            UNLOCK_STATE
        };
#ifdef MUTANT_HANDLERS_IN_SHUTDOWN
        runHandlers(taken); taken = 0;
#endif
        perform(a)                                                        /* [D3] */
#ifdef BOUNDED
        ;
        if
        :: roomWake -> BROADCAST_ROOM; roomWake = false                   /* they find it shut down */
        :: else -> skip
        fi
#endif
    fi;
    waitForWorkerExit();
    checkNothingLost()
}

/* releaseWorker: the last reference is gone (so every producer has finished its calls). */
inline release(a) {
    producersDone == NPROD;
    atomic { LOCK_STATE };                                                /* [R1] */
    atomic {                                                              /* [R2] */
        assert(!isSuspended);    /* released while suspended traps */
        if
        :: isAccepting -> lifecycle = RELEASED
        :: else -> skip
        fi;
        wakeWorkerIfNeeded(a);
        threadReclaimed = true;
        UNLOCK_STATE
    };
    perform(a);                                                           /* [R3] */
    workerEnded;                                                          /* [R4] join */
    checkNothingLost()
}

active proctype Controller() {
    byte a = A_NONE;
#ifdef BOUNDED
    bool roomWake = false;
#endif
#ifdef MUTANT_HANDLERS_IN_SHUTDOWN
    byte taken = 0;
#endif
    suspend();
#if defined(END_DRAIN) || defined(END_CANCEL)
#ifdef END_DRAIN
#define SHUT_MODE SHUT_DRAIN
#else
#define SHUT_MODE SHUT_CANCEL
#endif
    if
    :: resume(a); shutdown(SHUT_MODE, a)
    :: shutdown(SHUT_MODE, a); resume(a)   /* shutdown ends the suspension; resume still counts */
    fi;
#elif defined(END_RELEASE)
    resume(a);
    release(a);
#else
    resume(a);
#endif
    controllerDone = true
}

/* ------------------------------------------------------------------------------------------ */
/* The stall watchdog (StallWatchdog.Core.main, QueueCore+Watching.swift): WD_LOOKS looks at   */
/* any moments; after a look that found the queue idle (and no work seen meanwhile) it sleeps  */
/* until the queue wakes it. Then it stops and disarms the queue.                              */
/* ------------------------------------------------------------------------------------------ */

#ifdef WATCHDOG
#ifndef WD_LOOKS
#define WD_LOOKS 2
#endif

/* wakeUp.wait(releasing:). No spurious wake-ups here: the loop re-checks isAsleep, so one only
 * repeats the wait (and would multiply the states). */
#define WD_WAIT_RELEASING(w)  wdMutex = 0; w = true

active proctype Watchdog() {
    bool idle = false;
    byte looks = 0;
    do
    :: looks < WD_LOOKS ->
        atomic { wdMutex == 0 -> wdSawWork = false };                     /* [G1] looks += 1, sawWork = false */
        atomic {                                                          /* [G2] stallSample(armingIfIdle:) */
#ifdef MUTANT_LOOK_KEEPS_DOOR
            LOCK;
#else
            LOCK_STATE;
#endif
            idle = (owner == O_NONE && fifo.n == 0);
            if
            :: idle -> armed = true
            :: else -> skip
            fi;
            UNLOCK_STATE
        };
        atomic {                                                          /* [G3] */
            wdMutex == 0 -> wdMutex = _pid + 1;
            if
            :: idle && !wdSawWork -> wdAsleep = true                      /* allIdle && !sawWork */
            :: else -> skip
            fi
        };
        do
        :: atomic { wdAsleep -> WD_WAIT_RELEASING(wdWakeWaits) };         /* [G4] wakeUp.wait */
end_wdAsleep:
            !wdWakeWaits;
            atomic { wdMutex == 0 -> wdMutex = _pid + 1 }
        :: else -> break
        od;
        atomic { wdMutex = 0; looks++; idle = false }                     /* [G5] the interval */
    :: else -> break
    od;
    atomic {                                                              /* [G6] stop: disarmWatchdog */
        LOCK_STATE;
        armed = false;
        openFastPathIfIdle();
        UNLOCK_STATE
    }
}
#endif
