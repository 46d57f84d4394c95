/*
 * The pooled mode of SerialQueue (Sources/SerialCore/WorkerPool, with the queue side in
 * Sources/SerialCore/SerialQueue), as a Promela model for spin: two queues share the threads of
 * one WorkerPool of width 2 (-DTHREE: 3).
 *
 * queue.pml models a queue with its own worker; this file models what changes when a pool runs
 * the queue: the pool's run queue of runnable queues (the injection queue, under the pool's
 * mutex), pool threads that run bounded turns, spin and sleep, each pool thread's `next` slot
 * and own run queue (`local`, a bounded lock-free ring: Go's runq), both filled without the
 * pool's lock by the thread's own work while every other thread is busy and both stealable (a
 * thread that runs out of work steals half of another thread's ring, then a `next` slot: the pool
 * is work-conserving), the hand-over to a thread becoming free (Dekker's, on `freeCount`), the
 * hand-off of a `sync` turn that releases the pool thread, the blocking wrapper (the `next` queue
 * and the whole ring go to the run queue, a stand-in starts), suspend/resume and shutdown of a
 * pooled queue, task jobs (-DJOB), and the pool's shutdown. The
 * queue's own decisions (QueueState: the door, wakeWorkerIfNeeded, takeBatch, leaveSync, ...)
 * are the same code as in queue.pml and are written the same way here, per queue.
 *
 * README.md in this folder maps every step below to the code (step names in brackets, e.g.
 * [T2]), states the assumptions, the properties and the mutants. verify.sh runs every check.
 *
 * Switches (spin -D...):
 *   END_NONE                the controller suspends and resumes A; nothing ends (the pool
 *                           threads sleep forever).
 *   END_DRAIN, END_CANCEL   the controller suspends A, then resumes it and shuts it down
 *                           (shutdown(.drain) / .cancelPending, in either order) and waits for
 *                           it to exit; P0 makes no B.sync 2 (B stays idle).
 *   END_POOL                the controller shuts the pool down (WorkerPool.shutdown(.drain):
 *                           both queues, then the threads); P1 makes no A.async 4.
 *   NESTED                  the other instance: item 1's body, on a pool thread, makes
 *                           B.async 5 (B goes to the `next` slot, or to the run queue if a
 *                           thread is free) and B.sync 6 (the pool thread blocks: `next` goes to
 *                           the run queue, a stand-in starts); P1 makes B.sync 2 (none with
 *                           END_POOL), no suspension.
 *   JOB                     (with NESTED) between B.async 5 and B.sync 6, item 1's body enqueues
 *                           a task job J (item 7: enqueueJob from a pool thread goes through
 *                           pushLocal, to the thread's own ring or, while a thread is free, to the
 *                           run queue); B.sync 6 then blocks with J possibly in the ring.
 *   SMALL                   P1 makes no A.async 4 (NESTED: no B.sync 2), for the liveness runs.
 *   THREE                   (with NESTED JOB) a pool of 3 threads: slot 2 is a third pool thread
 *                           T2, started with the pool (no stand-in: WorkerPool(threads: 3));
 *                           item 1's body makes B.async 5 and enqueues J, and makes no B.sync 6
 *                           (no pool thread blocks). The watcher's steal beside an idle thread
 *                           while run-queue work counted on the watcher ([P5]'s wake).
 *   ENDLESS                 (with NESTED) item 1's body makes B.async 5 and then never ends (an
 *                           endless item: its thread never takes its `next` slot back), for
 *                           the liveness of the bounded delay (nextTakenDuringEndlessItem).
 *   BATCH_LIMIT=n           PoolCore.batchLimit (default 2: a turn's budget runs out with 3
 *                           items queued, or with work arriving during the turn).
 *   HOP_LIMIT=n             PoolCore.consecutiveHopLimit (default: any, each hop may be at the
 *                           limit or not; n: exactly n hops in a row, then the requeue).
 *   LCAP=1                  LocalRunQueue.capacity (256 in the code; the model supports 1 only).
 *   CHECK_<PROPERTY>        which assertions are compiled in (CHECK_ALL: all).
 *   MUTANT_<NAME>, VARIANT_<NAME>   one deliberate change (see README.md).
 */

/* ------------------------------------------------------------------------------------------ */
/* The instance. Queues A (0) and B (1); pool threads T0, T1 and one stand-in slot S.          */
/*   P0: A.async 1, then B.sync 2        P1: A.sync 3, then A.async 4       (switches: above)   */
/*   NESTED: P0: A.async 1, whose body makes B.async 5, then B.sync 6;   P1: B.sync 2           */
/*   JOB (with NESTED): item 1's body enqueues the task job J (item 7) before B.sync 6          */
/*   THREE (with NESTED JOB): S is a third pool thread T2; item 1's body makes no B.sync 6      */
/* ------------------------------------------------------------------------------------------ */

#define NQ 2
#define QA 0
#define QB 1
/* What a pool thread runs (PoolRunnable): queue A, queue B, or (JOB) the task job J. */
#define QJ 2
#ifdef JOB
#define NR 3                     /* runnables */
#define NITEMS 7
#define J_ITEM 7
#else
#define NR 2
#define NITEMS 6
#endif
#define NPROD 2
#ifdef THREE
#if !defined(NESTED) || !defined(JOB)
#error "THREE: with NESTED and JOB"
#endif
#define WIDTH 3                  /* WorkerPool(threads: 3): T0, T1, T2 (slot 2) */
#else
#define WIDTH 2                  /* WorkerPool(threads: 2) */
#endif
#define MAY_SPIN (WIDTH / 2 > 1 -> WIDTH / 2 : 1)   /* watchers allowed at once (PoolState.maySpin) */
#define NT 3                     /* pool thread slots: T0, T1, the stand-in S */
#define NW 5                     /* threads that can wait for a sync turn: T0, T1, S, P0, P1 */
#define W_P0 3
#define W_P1 4
#define NOT_POOL 255             /* `me` of a thread that is not a pool thread */
#define NONE 255                 /* an empty `next` slot */
#ifndef BATCH_LIMIT
#define BATCH_LIMIT 2            /* PoolCore.batchLimit (64 in the code) */
#endif
/* PoolCore.consecutiveHopLimit (64 in the code). Unset (the default): the model's chains are
 * short (one hop), so the limit is any number from 1 up: at every hop the chain may go on or be
 * at the limit, and both are checked in one search. HOP_LIMIT=n: exactly n. */
#ifdef HOP_LIMIT
#define AT_HOP_LIMIT (hops >= HOP_LIMIT)
#define BELOW_HOP_LIMIT (hops < HOP_LIMIT)
#else
#define AT_HOP_LIMIT true
#define BELOW_HOP_LIMIT true
#endif
#define RING 3                   /* room in a FIFO: at most 3 items per queue */
#ifndef LCAP
#define LCAP 1                   /* LocalRunQueue.capacity (256 in the code) */
#endif
#if LCAP != 1
#error "LCAP: the model's ring holds one runnable (a steal, takeHalf and the blocking move take it)"
#endif

#define ASYNC 0
#define SYNC 1
#define kindOf(id) (((id) == 2 || (id) == 3 || (id) == 6) -> SYNC : ASYNC)
#define queueOf(id) (((id) == 1 || (id) == 3 || (id) == 4) -> QA : (((id) == 7) -> QJ : QB))

/* ------------------------------------------------------------------------------------------ */
/* Constants of the code (as in queue.pml)                                                     */
/* ------------------------------------------------------------------------------------------ */

#define CLOSED 0
#define OPEN 1
#define HELD 2
#define HREC 3
#define O_NONE 0
#define O_WORKER 1
#define O_SYNC 2
/* QueueState.WorkerPhase, pooled meaning (SerialQueue.State.swift, "Pooled turns"): RUNNING a
 * pool thread runs a turn; SLEEPING with wakePending: scheduled (run queue, a `next` slot, or on
 * its way there); SLEEPING without: idle; AWAITING: handed to a sync caller, no thread. A
 * pooled queue never spins (SPINNING is the dedicated worker's). */
#define RUNNING 0
#define SLEEPING 2
#define AWAITING 3
#define EXITED 4
#define ACCEPTING 0
#define SHUT_DRAIN 1
#define SHUT_CANCEL 2
#define A_NONE 0
#define A_WAKE 1

#define S_NEW 0
#define S_ACCEPTED 1
#define S_RUNNING 2
#define S_DONE 3
#define S_DROPPED 4
#define S_REJECTED 5

/* What a pool thread's look at the run queue decided (PoolCore.threadMain). */
#define ACT_RUN 0
#define ACT_SPIN 1
#define ACT_IDLE 2
#define ACT_LEAVE 3
#define ACT_ADD_FREE 4           /* MUTANT_FREE_AFTER_SCAN: scanned, freeCount not yet added to */
#define ACT_DOZE 5               /* PoolCore.doze: idle, on a timed wait, a watcher of the slots */

/* ------------------------------------------------------------------------------------------ */
/* Shared variables                                                                            */
/* ------------------------------------------------------------------------------------------ */

typedef Ring { byte it[RING]; byte n };

/* Per queue (QueueCore, QueueState). Shared without the lock: door, interrupted, the waiting
 * flags of its conditions. */
byte door[NQ] = OPEN;            /* QueueCore.fastPath: a new pooled queue is idle, its door open */
bool interrupted[NQ];
bool workerExitedWaits[NQ];      /* QueueCore.workerExited (the controller waits) */
byte qmutex[NQ];                 /* QueueCore.mutex: 0 free, else holder's _pid + 1 */
Ring fifo[NQ];
byte owner[NQ];
byte phase[NQ] = SLEEPING;       /* a new pooled queue: no turn runs or is queued */
bool wakePending[NQ];
byte suspendCount[NQ];
byte lifecycle[NQ];
byte cancelledWork[NQ];

/* Per thread that can wait for a sync turn (CurrentQueueStack), indexed by waiter. */
bool turnGranted[NW];            /* isTurnGranted, guarded by the queue's mutex */
bool turnGrantedWaits[NW];       /* turnGranted (its condition) */

/* The pool (PoolCore, PoolState), guarded by pmutex except where noted. */
byte pmutex = 0;
typedef QRing { byte it[NR + 1]; byte n };   /* one more slot, so a double entry shows */
QRing runQ;                      /* PoolState.runQueue */
/* PoolWorker.local (LocalRunQueue), not guarded by pmutex: its owner pushes and pops without the
 * lock, thieves steal under it. A bounded array, head first, with a count; each operation on it
 * (push, the owner's pop, a steal, takeHalf) is one atomic step (README, "Assumptions"). */
typedef LRing { byte it[LCAP]; byte n };
LRing ownQ[NT];
byte idleStack[NT];              /* PoolState.idleWorkers (popLast) */
byte idleN = 0;
bool isWoken[NT];                /* PoolWorker.isWoken */
bool wakeUpWaits[NT];            /* PoolWorker.wakeUp: one waiter, its thread */
byte threadCount = WIDTH;        /* PoolState.threadCount (T0, T1 (THREE: T2) reserved by start()) */
byte blockedCount = 0;
bool attached[NQ] = true;        /* PoolState.attached */
byte nAttached = NQ;
bool isClosed = false;
bool isStopping = false;
byte spinningCount = 0;
bool changedWaits = false;       /* PoolCore.changed (the controller waits) */
#ifdef THREE
bool standInStarted = true;      /* slot 2 is T2, a pool thread from the start */
#else
bool standInStarted = false;     /* startThread() for the stand-in slot */
#endif
/* Thread-local in the code, global here so that the properties can see it (PoolWorker.isInTurn
 * and .batch are the pool threads' locals isInTurn and batch). */
byte nextSlot[NT] = NONE;        /* PoolWorker.next (atomic, sequentially consistent) */
/* Ghost: per watching thread, the `next` slots (a bit each) it saw filled when its watch window
 * began and that have held the same fill since (a bit is cleared when its slot empties): the
 * fill has waited at least one window, the patience (PoolCore.nextPatienceNanoseconds: time is
 * not modelled; a window is one patience long). The code tells the same fill by its word's tag. */
byte seenNext[NT];
/* Ghost: set when a fill this watcher saw at its window's start left its slot during the window
 * (its owner took it, or another watcher did): the watch saw turnover (spinBeforeSleeping's
 * sawTurnover). The code also counts fills that come and go within the window: fewer dozes here. */
bool sawTurnover[NT];
/* threadMain's sawOnlyTurnover: the last watch ended with turnover and nothing taken. */
bool dozeNext[NT];
bool dozing[NT];                 /* in PoolCore.doze (on the idle stack, or woken from it) */
byte dozingN = 0;                /* PoolState.dozingCount */
byte freeCount = 0;              /* PoolCore.freeCount (atomic; changed under pmutex) */
bool isFree[NT];                 /* threadMain's local isFree: counted in freeCount */

/* Ghosts, for the properties only. */
byte st[NITEMS + 1];
byte seq[NITEMS + 1];            /* entry order in its queue */
byte nextSeq[NQ] = 1;
byte lastSeq[NQ];
byte running[NQ];                /* bodies of the queue running now */
byte inTurn[NQ];                 /* pool threads inside a turn of the queue */
byte waiterOf[NITEMS + 1];       /* the thread a sync turn belongs to (it is in the FIFO entry) */
bool looking[NT] = true;         /* the thread will look at the run queue without being woken
                                  * (S's counts only once it is reserved: nLooking) */
byte nLooking = WIDTH;
/* Work conservation: the thread will look at the run queue next without running any work first
 * (not yet started, woken, a stand-in reserved, ending a turn or a hop chain with the queue put
 * back in the run queue for itself to take (mustLookAtRunQueue), or out of its watch window);
 * spinning threads are counted by spinningCount. Cleared by its look. */
bool publishing[NT];             /* between filling `next` and deciding whether to publish it */
bool publishingLocal[NT];        /* between pushing to `local` and re-reading freeCount (pushLocal) */
bool freeLook[NT] = true;       /* T0, T1 look first; S's counts once it is reserved */
hidden byte conserving;
byte nAccepted = 0;
byte nFinished = 0;
byte producersDone = 0;
bool controllerDone = false;

hidden byte ti;
hidden byte tj;
hidden byte droppable;
hidden byte settled;
hidden byte reported;
hidden byte queuedOnce;
hidden byte oneThread;
hidden byte notLost;
hidden byte freeThreads;
hidden byte moved;

/* ------------------------------------------------------------------------------------------ */
/* Properties as assertions                                                                    */
/* ------------------------------------------------------------------------------------------ */

#ifdef CHECK_ALL
#define CHECK_EXCLUSION
#define CHECK_ORDER
#define CHECK_ONCE
#define CHECK_NOTHING_LOST
#define CHECK_CODE_INVARIANTS
#define CHECK_POOL
#define CHECK_WORK_CONSERVING
#define CHECK_LOCALITY
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
#ifdef CHECK_POOL
#define CHECK_ONE_THREAD
#define assertPool(e) assert(e)
#else
#define assertPool(e) skip
#endif
#ifdef CHECK_ONE_THREAD
#define assertOneThread(e) assert(e)
#else
#define assertOneThread(e) skip
#endif
/* Locality: a queue in a thread's `next` slot is taken by another thread only once it has waited
 * there the patience (a watcher saw the same fill for a whole window), or after its thread gave
 * it up (the blocking wrapper publishes it to the run queue). */
#ifdef CHECK_LOCALITY
#define assertLocality(e) assert(e)
#else
#define assertLocality(e) skip
#endif

#ifdef PROBE
#define reached(k) assert(PROBE != (k))
#define reachedIf(c, k) if :: (c) -> assert(PROBE != (k)) :: else -> skip fi
#elif defined(PROBE_RUNTIME)
/* The probe's number from pan's environment (PROBE=k), read when pan starts: one pan serves
 * every probe of a configuration (verify.sh compiles it once). k must be a literal. */
c_code { static int probeFromEnvironment(void) { const char *text = getenv("PROBE"); return text ? atoi(text) : 0; } }
c_state "int probeNumber" "Hidden" "probeFromEnvironment()"
#define reached(k) if :: c_expr { probeNumber == k } -> assert(k != k) :: else -> skip fi
#define reachedIf(c, k) if :: (c) -> reached(k) :: else -> skip fi
#else
#define reached(k) skip
#define reachedIf(c, k) skip
#endif

/* ------------------------------------------------------------------------------------------ */
/* Liveness (pan -a -f: weak fairness)                                                         */
/* ------------------------------------------------------------------------------------------ */

ltl everyAcceptedItemRuns { [] <> (nAccepted == nFinished) }
ltl everyCallReturns { <> (producersDone == NPROD && controllerDone) }
/* ENDLESS: B.async 5, made runnable into the `next` slot of a thread whose item never ends, runs
 * all the same (a free thread takes it after the patience): the bound of work conservation. */
ltl nextTakenDuringEndlessItem { <> (st[5] == S_DONE) }

/* ------------------------------------------------------------------------------------------ */
/* QueueState, per queue (SerialQueue.State.swift)                                             */
/* ------------------------------------------------------------------------------------------ */

#define isAccepting(q) (lifecycle[q] == ACCEPTING)
#define isSuspended(q) (suspendCount[q] > 0 && lifecycle[q] == ACCEPTING)
#define isIdle(q) (owner[q] == O_NONE && fifo[q].n == 0 && !isSuspended(q) && isAccepting(q) \
    && phase[q] == SLEEPING && !wakePending[q])
#ifdef VARIANT_EXIT_IGNORES_OWNER
#define workerShouldExit(q) (!isAccepting(q) && fifo[q].n == 0)
#else
#define workerShouldExit(q) (!isAccepting(q) && fifo[q].n == 0 && owner[q] == O_NONE)
#endif
#define hasRunnableWork(q) (owner[q] == O_NONE && !isSuspended(q) && fifo[q].n > 0)

inline checkInvariants(q) {
    assertCodeInvariant(!wakePending[q] || phase[q] == SLEEPING);
    assertCodeInvariant(phase[q] != AWAITING || owner[q] != O_NONE);
    assertCodeInvariant(phase[q] != EXITED || (fifo[q].n == 0 && !isAccepting(q)));
    assertCodeInvariant(!(phase[q] == SLEEPING && owner[q] == O_NONE && fifo[q].n > 0
        && !isSuspended(q) && !wakePending[q]))
}

/* wakeWorkerIfNeeded: for a pooled queue, "wake the worker" means "schedule a turn". */
inline wakeWorkerIfNeeded(q, a) {
    if
#ifdef MUTANT_WAKE_IGNORES_PENDING
    :: (phase[q] == SLEEPING && owner[q] == O_NONE
#else
    :: (phase[q] == SLEEPING && !wakePending[q] && owner[q] == O_NONE
#endif
        && ((fifo[q].n > 0 && !isSuspended(q)) || workerShouldExit(q))) ->
        wakePending[q] = true; a = A_WAKE
    :: else -> a = A_NONE
    fi
}

inline accept(id) {
    st[id] = S_ACCEPTED; seq[id] = nextSeq[queueOf(id)]; nextSeq[queueOf(id)]++; nAccepted++
}

/* The task job is accepted when enqueueJob is called (it has no queue, hence no sequence). */
#ifdef JOB
#define noteJobAccepted(r) if :: (r) == QJ -> st[J_ITEM] = S_ACCEPTED; nAccepted++ :: else -> skip fi
#else
#define noteJobAccepted(r) skip
#endif

inline submit(q, id, a) {
    fifo[q].it[fifo[q].n] = id; fifo[q].n++; accept(id);
    wakeWorkerIfNeeded(q, a)
}

/* QueueState.takeBatch(into:limit:): at most BATCH_LIMIT items from the FIFO's front. */
inline takeBatch(q) {
    assertCodeInvariant(batch.n == 0);
    do
    :: batch.n < BATCH_LIMIT && fifo[q].n > 0 ->
        batch.it[batch.n] = fifo[q].it[0]; batch.n++;
#ifndef MUTANT_TAKE_COPY
        ti = 1;
        do
        :: ti < fifo[q].n -> fifo[q].it[ti - 1] = fifo[q].it[ti]; ti++
        :: else -> break
        od;
        fifo[q].n--; fifo[q].it[fifo[q].n] = 0; ti = 0
#else
        /* copies instead of moving: only the count goes down (the item stays visible to the
         * next take through the ring's slots) */
        fifo[q].n--;
        break
#endif
    :: else -> break
    od
}

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
inline returnUnrun(q) {
#ifdef MUTANT_HANDOFF_REST_TO_BACK
    ti = 0;
    do
    :: ti < batch.n -> fifo[q].it[fifo[q].n + ti] = batch.it[ti]; batch.it[ti] = 0; ti++
    :: else -> break
    od;
#else
    ti = fifo[q].n;
    do
    :: ti > 0 -> ti--; fifo[q].it[ti + batch.n] = fifo[q].it[ti]
    :: else -> break
    od;
    ti = 0;
    do
    :: ti < batch.n -> fifo[q].it[ti] = batch.it[ti]; batch.it[ti] = 0; ti++
    :: else -> break
    od;
#endif
    fifo[q].n = fifo[q].n + batch.n; batch.n = 0; ti = 0
}

inline drop(q, id) {
    assertOnce(st[id] == S_ACCEPTED);
    droppable = (kindOf(id) == ASYNC && lifecycle[q] == SHUT_CANCEL);
    assertNothingLost(droppable);
    st[id] = S_DROPPED; nFinished++; cancelledWork[q]++; reached(13)
}

inline removeCancellableWork(q) {
    ti = 0; tj = 0;
    do
    :: ti < fifo[q].n ->
#ifdef MUTANT_CANCEL_DROPS_SYNC
        drop(q, fifo[q].it[ti]);
#else
        if
        :: kindOf(fifo[q].it[ti]) == ASYNC -> drop(q, fifo[q].it[ti])
        :: else -> fifo[q].it[tj] = fifo[q].it[ti]; tj++
        fi;
#endif
        ti++
    :: else -> break
    od;
    ti = tj;
    do
    :: ti < fifo[q].n -> fifo[q].it[ti] = 0; ti++
    :: else -> break
    od;
    fifo[q].n = tj; ti = 0; tj = 0
}

/* ------------------------------------------------------------------------------------------ */
/* Locks, the door, condition variables                                                        */
/* ------------------------------------------------------------------------------------------ */

#define QLOCK(q)   qmutex[q] == 0 -> qmutex[q] = _pid + 1
#define QUNLOCK(q) assert(qmutex[q] == _pid + 1); qmutex[q] = 0
#define PLOCK      pmutex == 0 -> pmutex = _pid + 1
/* PoolState's documented invariant: while the pool is not stopping, at least `width` of its
 * threads are free to run turns (a stand-in is reserved in the step that blocks a thread). */
#define PUNLOCK    assert(pmutex == _pid + 1); \
                   freeThreads = (isStopping || threadCount - blockedCount >= WIDTH); \
                   assertPool(freeThreads); pmutex = 0

inline closeFastPath(q) {
    if
    :: door[q] == OPEN -> door[q] = CLOSED
    :: door[q] == HELD -> door[q] = HREC; owner[q] = O_SYNC; reached(3)
    :: else -> skip
    fi
}

#define QLOCK_STATE(q)   QLOCK(q); closeFastPath(q)
#define QUNLOCK_STATE(q) checkInvariants(q); QUNLOCK(q)

inline openFastPathIfIdle(q) {
    if
    :: isIdle(q) -> door[q] = OPEN
    :: else -> skip
    fi
}

/* pthread_cond_wait, first half: release the mutex m and start waiting on w (a signal clears w).
 * Spurious wake-ups, any number, are in the waits' guards below: a waiter may also return
 * while w is still set, once the condition its loop re-checks no longer holds (it then goes on
 * exactly as if signalled, and the late signal may hit a later wait of the same condition). A
 * spurious return while that condition still holds only re-checks it under the lock and waits
 * again: a step that changes nothing, left out (README, "Spurious wake-ups"). */
#define WAIT_RELEASING(m, w) m = 0; w = true
/* the wait ends: signalled, or spuriously with its loop's condition `done` */
#define WOKEN(w, done) (!(w) || (done))
#define noteSpurious(w) reachedIf(w, 9)

/* ------------------------------------------------------------------------------------------ */
/* The pool's run queue (PoolCore, PoolState)                                                  */
/* ------------------------------------------------------------------------------------------ */

/* Never twice in the run queue, a `next` slot or a thread's own run queue (nor in two of them). */
inline checkQueuedOnce(q) {
    queuedOnce = true;
    tj = 0;
    do
    :: tj < runQ.n -> if :: runQ.it[tj] == q -> queuedOnce = false :: else -> skip fi; tj++
    :: else -> break
    od;
    tj = 0;
    do
    :: tj < NT -> if :: nextSlot[tj] == q -> queuedOnce = false :: else -> skip fi; tj++
    :: else -> break
    od;
    tj = 0;
    do
    :: tj < NT * LCAP ->
        if :: tj % LCAP < ownQ[tj / LCAP].n && ownQ[tj / LCAP].it[tj % LCAP] == q -> queuedOnce = false :: else -> skip fi;
        tj++
    :: else -> break
    od;
    tj = 0;
    assertPool(queuedOnce)
}

/* A `next` slot empties (its owner takes it, gives it up, or a watcher takes it): no watcher has
 * seen the fill that comes next. */
#define emptyNext(t) nextSlot[t] = NONE; \
    sawTurnover[0] = sawTurnover[0] || ((seenNext[0] >> (t)) & 1); \
    sawTurnover[1] = sawTurnover[1] || ((seenNext[1] >> (t)) & 1); \
    sawTurnover[2] = sawTurnover[2] || ((seenNext[2] >> (t)) & 1); \
    seenNext[0] = seenNext[0] & ~(1 << (t)); seenNext[1] = seenNext[1] & ~(1 << (t)); \
    seenNext[2] = seenNext[2] & ~(1 << (t))

/* PoolState.popIdleWorker: the most recently idle thread, marked woken (signalled later). */
inline popIdleWorker(woken) {
    if
    :: idleN > 0 ->
        idleN--; woken = woken | (1 << idleStack[idleN]); isWoken[idleStack[idleN]] = true;
        looking[idleStack[idleN]] = true; nLooking++; freeLook[idleStack[idleN]] = true;
        idleStack[idleN] = 0; reached(7)
    :: else -> skip
    fi
}

/* The signals after unlocking: each woken worker's wakeUp.signal(). */
inline signalWoken(woken) {
    atomic {
        tj = 0;
        do
        :: tj < NT -> if :: (woken >> tj) & 1 -> wakeUpWaits[tj] = false :: else -> skip fi; tj++
        :: else -> break
        od;
        tj = 0; woken = 0
    }
}

#ifdef MUTANT_POOL_STOP_EARLY
#define threadsShouldLeave (isStopping && runQ.n == 0)
#else
#define threadsShouldLeave (isStopping && nAttached == 0 && runQ.n == 0)
#endif

/* PoolCore.enqueue -> PoolState.enqueue, under the pool's lock: append; wake an idle thread
 * unless the threads that will look anyway (spinning ones, the caller) cover the run queue. */
inline enqueueLocked(q, callerWillDequeue, woken) {
    checkQueuedOnce(q);
    runQ.it[runQ.n] = q; runQ.n++;
    if
    :: runQ.n <= spinningCount + (callerWillDequeue -> 1 : 0) -> reachedIf(spinningCount > 0, 6)
    :: else -> popIdleWorker(woken)
    fi
}

/* PoolCore.enqueue: one pool critical section, then the signal after unlocking. */
inline enqueue(q, callerWillDequeue, woken) {
    atomic { PLOCK; enqueueLocked(q, callerWillDequeue, woken); PUNLOCK };    /* [Q1] */
    if :: woken != 0 -> signalWoken(woken) :: else -> skip fi              /* [Q2] */
}

/* PoolState.dequeue: the run queue's head into r. */
inline dequeue(r) {
    r = runQ.it[0];
    ti = 1;
    do
    :: ti < runQ.n -> runQ.it[ti - 1] = runQ.it[ti]; ti++
    :: else -> break
    od;
    runQ.n--; runQ.it[runQ.n] = 0; ti = 0
}

/* LocalRunQueue, on thread t's ring: push at the tail (the owner), take the head (the owner's
 * pop, a thief's stealHalf, the owner's takeHalf: with one runnable in the ring, half rounded up
 * is that one, and a steal leaves nothing in the thief's ring). Each is one atomic step: the compare-and-swap of `head` (or the
 * sequentially consistent store of `tail`) is where it takes effect (README, "Assumptions"). */
inline localPush(t, r) {
    checkQueuedOnce(r);
    ownQ[t].it[ownQ[t].n] = r; ownQ[t].n++
}

inline localTakeHead(t, r) {
    r = ownQ[t].it[0];
    ti = 1;
    do
    :: ti < ownQ[t].n -> ownQ[t].it[ti - 1] = ownQ[t].it[ti]; ti++
    :: else -> break
    od;
    ownQ[t].n--; ownQ[t].it[ownQ[t].n] = 0; ti = 0
}

/* PoolCore.moveLocalWorkToRunQueue(of: me, adding:), on the pool thread me: takeHalf (all of the
 * ring, when the thread is about to block, adding == NONE; half of the full ring and then
 * `adding`, from pushLocal) [V1]; then, under the pool's lock, each to the run queue's tail with
 * the enqueue's wake rule [V2]; the signals after unlocking [V3]. Between [V1] and [V2] what was
 * taken is in the thread's hands only (`carry`): no other thread can see it. */
inline moveLocalToRunQueue(me, adding, carry, woken) {
    atomic {                                                              /* [V1] takeHalf */
        if
        :: ownQ[me].n > 0 -> localTakeHead(me, carry)
        :: else -> carry = NONE                                           /* a thief was first */
        fi
    };
    atomic {                                                              /* [V2] */
        PLOCK;
        if :: carry != NONE -> enqueueLocked(carry, false, woken) :: else -> skip fi;
        if :: adding != NONE -> enqueueLocked(adding, false, woken) :: else -> skip fi;
        carry = 0;
        PUNLOCK
    };
    if :: woken != 0 -> signalWoken(woken) :: else -> skip fi              /* [V3] */
}

/* PoolCore.pushLocal, on the pool thread me (its own work made r runnable: makeRunnable with
 * `next` taken or outside a turn, enqueueJob, the re-queue of a queue whose turn left work).
 * [O1] the read of freeCount: a thread is free (looking, spinning or idle) -> [O2] the run queue
 * (`looksNext`: the caller takes the run queue's head next, as `lookingWorker`). Else [O3] the
 * push (a full ring: half of it and r go to the run queue, [V1]-[V3]), then [O4] the second read
 * of freeCount (Dekker's with look, which adds to freeCount, then reads every ring): a thread
 * became free meanwhile -> under the lock, localWorkNotices += 1 (a hint for watching threads,
 * not modelled: a watch window has any length here) and one idle thread, if any, is woken.
 * `took` is the caller's scratch variable (0 again on return). */
inline pushLocal(r, me, callerLooksNext, took, woken, pushProbe) {
#ifdef VARIANT_PUSH_ALWAYS
    atomic { took = 0; looksNext = callerLooksNext; noteJobAccepted(r) };   /* no first read */
#else
    atomic { took = (freeCount > 0); looksNext = callerLooksNext; noteJobAccepted(r) };   /* [O1] */
#endif
    if
    :: atomic { took ->                                                   /* [O2] */
            took = 0;
            PLOCK; enqueueLocked(r, looksNext, woken);
            if :: looksNext -> freeLook[me] = true :: else -> skip fi;   /* mustLookAtRunQueue, willLook */
            looksNext = false; PUNLOCK
        };
        if :: woken != 0 -> signalWoken(woken) :: else -> skip fi
    :: atomic { !took && ownQ[me].n < LCAP ->                            /* [O3] push */
            looksNext = false; localPush(me, r); publishingLocal[me] = true;
            if :: pushProbe == 41 -> reached(41) :: else -> reached(30) fi;
#ifdef MUTANT_LOCAL_NO_RECHECK
            publishingLocal[me] = false
        }
#else
            /* [O4] the second read, in the push's step: freeCount changes only in a look (one
             * step under the lock), and a look after the push sees the pushed runnable (it
             * steals it, or the ring's owner took it back), so nothing is missed (README) */
            if
            :: freeCount > 0 ->
                PLOCK;                                                    /* (may wait: [O4] is then a step of its own) */
#ifndef MUTANT_NOTICE_NO_WAKE
                popIdleWorker(woken); reachedIf(woken != 0, 31);
#endif
                reachedIf(woken == 0, 32);
                PUNLOCK
            :: else -> skip
            fi;
            publishingLocal[me] = false
        };
        if :: woken != 0 -> signalWoken(woken) :: else -> skip fi
#endif
    :: atomic { !took && ownQ[me].n == LCAP -> looksNext = false; publishingLocal[me] = true; reached(33) };   /* full */
        moveLocalToRunQueue(me, r, took, woken);
        publishingLocal[me] = false
    fi
}

/* PoolCore.makeRunnable, from the thread `me`: inside its own turn with an empty `next` slot,
 * into the slot [M1] (a sequentially consistent store), then the reads of freeCount and
 * watchingCount (spinningCount's atomic copy) [M2]: a thread is free and none watches -> under
 * the pool's lock, an idle thread is woken to watch (if none is idle, a free thread is about to
 * look: it reads the slots after its add to freeCount) [M3]. The queue stays in the slot: its
 * thread runs it after the turn, or a watcher takes it after the patience. From a pool thread
 * with `next` taken, or outside a turn (a task job's work): pushLocal. From any other thread:
 * enqueue. MUTANT_PRIVATE_NEXT is the pool's first version of the slot: no read, no wake-up, and
 * no thread watches or takes it (see lookDecides, [P5]). */
inline makeRunnable(q, me, woken) {
    if
    :: me != NOT_POOL && isInTurn && nextSlot[me] == NONE ->
#ifdef MUTANT_CHECK_BEFORE_FILL
        /* reads freeCount and watchingCount first, then fills: a thread may become free, find the
         * slot empty and sleep in between */
        atomic { publishing[me] = true; took = (freeCount > 0 && spinningCount + dozingN == 0) };
        atomic { checkQueuedOnce(q); nextSlot[me] = q; reached(1) };
        if
        :: took -> took = 0; atomic { PLOCK; popIdleWorker(woken); PUNLOCK; publishing[me] = false };
            if :: woken != 0 -> signalWoken(woken) :: else -> skip fi
        :: else -> publishing[me] = false
        fi
#else
        atomic { checkQueuedOnce(q); nextSlot[me] = q; publishing[me] = true; reached(1) }   /* [M1] */
#ifdef MUTANT_PRIVATE_NEXT
        publishing[me] = false
#else
        /* [M2] the reads of freeCount, then watchingCount; [M3] under the pool's lock, an idle
         * thread woken to watch (spinningCount read again there). The reads and the wake-up are
         * one step: freeCount and spinningCount change only under the lock, in steps that read
         * the slots after the change (look, [P5]), so a split only adds a wake-up that the
         * watcher then covers (README, "Assumptions"). */
        atomic {
            if
            :: freeCount > 0 && spinningCount + dozingN == 0 ->
                PLOCK; popIdleWorker(woken); reachedIf(woken != 0, 18); PUNLOCK
            :: freeCount > 0 && spinningCount + dozingN > 0 -> reached(19)   /* a watcher (or a dozer) will see it */
            :: else -> skip
            fi;
            publishing[me] = false
        };
        if :: woken != 0 -> signalWoken(woken) :: else -> skip fi
#endif
#endif
    :: me != NOT_POOL && !(isInTurn && nextSlot[me] == NONE) -> pushLocal(q, me, false, took, woken, 30)
    :: me == NOT_POOL -> enqueue(q, false, woken)
    fi
}

/* Whether a fill of `next` wakes nobody: no thread is free, or one watches (the first
 * version: always). */
#ifdef MUTANT_PRIVATE_NEXT
#define FILL_WAKES_NOBODY true
#else
#define FILL_WAKES_NOBODY (freeCount == 0 || spinningCount + dozingN > 0)
#endif

/* QueueCore.perform for a pooled queue. */
inline perform(q, a, me, woken) {
    if
    :: a == A_WAKE -> a = A_NONE; makeRunnable(q, me, woken)
    :: else -> a = A_NONE
    fi
}

/* CurrentQueueStack.blocking, before the wait (me is a pool thread, the queue's lock may be
 * held): the `next` queue goes to the run queue [N1], then everything in the thread's own run
 * queue (moveLocalWorkToRunQueue: [V1]-[V3]); then PoolCore.beginBlocking [N2]: blockedCount
 * += 1, and a stand-in is reserved and started if fewer than `width` threads would be free. */
inline beginBlocking(me, woken) {
#ifndef MUTANT_NEXT_KEPT_WHILE_BLOCKING
    if
    :: atomic { nextSlot[me] != NONE ->                                   /* [N1] takeNext */
            moved = nextSlot[me]; emptyNext(me);
            PLOCK; enqueueLocked(moved, false, woken); PUNLOCK;
            if :: woken != 0 -> signalWoken(woken) :: else -> skip fi;
            moved = 0; reached(12)
        }
    :: else -> skip
    fi;
#endif
#ifndef MUTANT_BLOCK_KEEPS_LOCAL
    if                                                                    /* !local.isEmpty */
    :: atomic { ownQ[me].n > 0 -> localTakeHead(me, took) };             /* [V1] takeHalf */
        atomic { PLOCK; enqueueLocked(took, false, woken); took = 0; reached(34); PUNLOCK };   /* [V2] */
        if :: woken != 0 -> signalWoken(woken) :: else -> skip fi         /* [V3] */
    :: else -> skip
    fi;
#endif
    atomic {                                                              /* [N2] */
        PLOCK;
        blockedCount++; looking[me] = false; nLooking--;
#ifndef MUTANT_NO_STAND_IN
        if
        :: threadCount - blockedCount < WIDTH ->
            threadCount++; assert(!standInStarted); standInStarted = true;   /* startThread() */
            looking[2] = true; nLooking++; freeLook[2] = true; reached(2)
        :: else -> skip
        fi;
#endif
        PUNLOCK
    }
}


/* ------------------------------------------------------------------------------------------ */
/* Bodies (ghost)                                                                              */
/* ------------------------------------------------------------------------------------------ */

inline bodyStarts(q, id) {
    atomic {
        assertExclusion(running[q] == 0);
        assertOnce(st[id] == S_ACCEPTED);
        assertOrder(seq[id] > lastSeq[q]);
        running[q]++; st[id] = S_RUNNING; lastSeq[q] = seq[id]
    }
}

inline bodyEnds(q, id) {
    atomic { running[q]--; st[id] = S_DONE; nFinished++ }
}

/* ------------------------------------------------------------------------------------------ */
/* Calls on a queue (QueueCore.trySubmit, SerialQueue.sync) from thread `me` (a pool thread's   */
/* index, or NOT_POOL) whose sync waits use waiter slot `w`                                     */
/* ------------------------------------------------------------------------------------------ */

/* tryAsync (async traps on a shut-down queue instead; the protocol is the same) */
inline asyncCall(q, id, me, a, woken) {
    atomic {                                                              /* [A1] */
        QLOCK_STATE(q);
        if
        :: !isAccepting(q) -> st[id] = S_REJECTED; reached(11)
        :: else -> submit(q, id, a)
        fi;
        QUNLOCK_STATE(q)
    };
    perform(q, a, me, woken)                                              /* [A2] */
}

/* Waits on `w` (a condition of the queue q) while `cond` holds; called with q's lock held,
 * returns with it held. pthread_cond_wait's return (retaking the lock) and the loop's re-check
 * are one step (README: "Steps"). */
#define QWAIT_WHILE(q, cond, w) \
    do \
    :: atomic { (cond) -> WAIT_RELEASING(qmutex[q], w) }; \
        atomic { WOKEN(w, !(cond)) -> noteSpurious(w); QLOCK(q) } \
    :: else -> break \
    od

inline syncCall(q, id, me, w, via, left, a, woken) {
    atomic {                                                              /* [Y1] */
        waiterOf[id] = w;
        if
        :: door[q] == OPEN -> door[q] = HELD; accept(id); via = true; reached(10)
        :: else -> via = false
        fi
    };
    if
    :: !via ->
        /* enterSyncThroughTheLock */
        atomic {                                                          /* [Y2] */
            QLOCK_STATE(q);
            if
            :: !isAccepting(q) -> st[id] = S_REJECTED; reached(11); QUNLOCK_STATE(q)   /* (sync traps) */
            :: isAccepting(q) && owner[q] == O_NONE && fifo[q].n == 0 && !isSuspended(q) ->
                owner[q] = O_SYNC; accept(id); QUNLOCK_STATE(q)           /* [Y3] tryEnterSync */
            :: else ->                                                    /* [Y4] */
                turnGranted[w] = false; submit(q, id, a);
                /* perform, under the queue's lock (the pool's lock nests inside it) */
                if
                :: a == A_WAKE ->
                    a = A_NONE;
                    /* makeRunnable under the queue's lock, as one step here (its races
                     * with a thief and a thread becoming free are checked on the async path
                     * above; in these instances a pool thread's sync never wakes its queue) */
                    if
                    :: me != NOT_POOL && isInTurn && nextSlot[me] == NONE ->
                        checkQueuedOnce(q); nextSlot[me] = q;
                        if
                        :: FILL_WAKES_NOBODY -> skip
                        :: else -> PLOCK; popIdleWorker(woken); PUNLOCK
                        fi
                    :: me != NOT_POOL && !(isInTurn && nextSlot[me] == NONE) && freeCount == 0 && ownQ[me].n < LCAP ->
                        localPush(me, q)                                  /* pushLocal, both reads: 0 */
                    :: else ->
                        PLOCK; enqueueLocked(q, false, woken); PUNLOCK
                    fi
                :: else -> skip
                fi;
                turnWait = true
            fi
        };
        if
        :: turnWait ->
            turnWait = false;
            if
            :: me != NOT_POOL -> beginBlocking(me, woken); reached(5)    /* [N1] [N2] */
            :: else -> skip
            fi;
            QWAIT_WHILE(q, !turnGranted[w], turnGrantedWaits[w]);         /* [Y5] */
            atomic { QUNLOCK_STATE(q) };                                  /* [Y6] */
            if
            :: me != NOT_POOL ->                                          /* [N3] endBlocking */
                atomic { PLOCK; blockedCount--; looking[me] = true; nLooking++; PUNLOCK }
            :: else -> skip
            fi
        :: else -> skip
        fi
    :: else -> skip
    fi;
    if
    :: st[id] == S_REJECTED -> skip
    :: else ->
        bodyStarts(q, id); bodyEnds(q, id);                               /* [Y7] */
        atomic {                                                          /* [L1] */
            if
            :: via && door[q] == HELD -> door[q] = OPEN; left = true
            :: else -> left = false
            fi
        };
        if
        :: !left ->
            atomic {                                                      /* [L2] leaveSyncThroughTheLock */
                QLOCK(q);
                if
                :: via -> assertCodeInvariant(door[q] == HREC); door[q] = CLOSED
                :: else -> closeFastPath(q)
                fi;
                /* QueueState.leaveSync */
                assertCodeInvariant(owner[q] == O_SYNC);
                if
                :: phase[q] == AWAITING ->
                    owner[q] = O_WORKER;
#ifdef MUTANT_LEAVE_NO_REQUEUE
                    a = A_NONE
#else
                    a = A_WAKE; reached(8)
#endif
                :: else -> owner[q] = O_NONE; wakeWorkerIfNeeded(q, a)
                fi;
                openFastPathIfIdle(q);
                QUNLOCK_STATE(q)
            };
            perform(q, a, me, woken)                                      /* [L3] */
        :: else -> skip
        fi
    fi;
    via = false; left = false
}

/* ------------------------------------------------------------------------------------------ */
/* A pooled turn (QueueCore.runPooledTurn, run, handOffReleasingThePoolThread)                 */
/* ------------------------------------------------------------------------------------------ */

/* Item 1's body, on the pool thread t: B.async 5, (JOB) enqueueJob(J), then B.sync 6. */
inline bodyOfItem1(t, a, woken, via2, left2) {
#ifdef ENDLESS
    asyncCall(QB, 5, t, a, woken);
end_endless:
    false                                                                 /* the item never ends */
#elif defined(NESTED)
    asyncCall(QB, 5, t, a, woken);
#ifdef JOB
    pushLocal(QJ, t, false, took, woken, 30);                                 /* PoolCore.enqueueJob */
#endif
#ifndef THREE
    syncCall(QB, 6, t, t, via2, left2, a, woken)
#endif
#else
    skip
#endif
}

/* PoolCore.requeue(_:from:), on the pool thread t (a turn of q left work [T6], or a hop chain
 * reached consecutiveHopLimit [P3]): callerLooksNext = !hasNext && local.isEmpty (with neither a
 * `next` queue nor work in its own ring, this thread looks at the run queue next: ghost
 * freeLook, the code's mustLookAtRunQueue and willLook); then runnableHint > 0 (read without
 * the lock, relaxed, possibly stale: either way may be taken whatever the run queue holds) ->
 * the run queue's tail [R1], else pushLocal [O1]-[O4]. `fromHop`: only for the probes (40, 41). */
inline requeue(q, t, fromHop) {
    if
    :: atomic {                                                           /* [R1] runnableHint > 0: the tail */
            PLOCK; looksNext = (nextSlot[t] == NONE && ownQ[t].n == 0);
            enqueueLocked(q, looksNext, woken);
            if :: looksNext -> freeLook[t] = true :: else -> skip fi;
            looksNext = false; reached(39); reachedIf(fromHop, 40); PUNLOCK
        };
        if :: woken != 0 -> signalWoken(woken) :: else -> skip fi
    :: pushLocal(q, t, (nextSlot[t] == NONE && ownQ[t].n == 0), took, woken, (fromHop -> 41 : 30))   /* runnableHint == 0 */
    fi
}

/* The end of a turn that did not hand the queue over, with the queue's lock held: exit (the
 * queue is shut down or released and drained), back to the run queue (work left: the turn's
 * budget ran out, or work came), or asleep (idle). `after` says what is left to do after
 * unlocking: signal the threads the pool woke, or enqueue. */
inline endTurn(q, t, woken, after) {
    if
    :: workerShouldExit(q) ->                                             /* exit */
        /* shutdown handlers: not modelled (README) */
        PLOCK;                                                            /* pool.detach */
        attached[q] = false; nAttached--;
        if
        :: threadsShouldLeave -> do :: idleN > 0 -> popIdleWorker(woken) :: else -> break od
        :: else -> skip
        fi;
        changedWaits = false;                                             /* changed.broadcast() */
        PUNLOCK;
        phase[q] = EXITED; workerExitedWaits[q] = false;                  /* workerExited.broadcast() */
        inTurn[q]--;
        QUNLOCK_STATE(q);
        after = (woken != 0 -> 1 : 0)
#ifndef MUTANT_NO_REQUEUE_AFTER_TURN
    :: hasRunnableWork(q) ->                                              /* requeuePooledTurn */
        reached(4);
        phase[q] = SLEEPING; wakePending[q] = true; inTurn[q]--;
        QUNLOCK_STATE(q);
        after = 2
#endif
    :: else ->                                                            /* fallAsleep */
        phase[q] = SLEEPING; openFastPathIfIdle(q); inTurn[q]--;
        QUNLOCK_STATE(q);
        after = 0
    fi
}

inline runPooledTurn(t, q, id, a, woken, handed, after, via2, left2) {
    atomic {                                                              /* [T1] */
        QLOCK_STATE(q);
        oneThread = (inTurn[q] == 0);
        assertOneThread(oneThread);
        inTurn[q]++;
        /* beginPooledTurn */
        if
        :: phase[q] == AWAITING ->
            assertCodeInvariant(owner[q] == O_WORKER);
            phase[q] = RUNNING; owner[q] = O_NONE
        :: else ->
            assertCodeInvariant(wakePending[q]);
            phase[q] = RUNNING; wakePending[q] = false
        fi;
        if
        :: owner[q] == O_NONE && !isSuspended(q) && fifo[q].n > 0 ->       /* takeBatch */
            owner[q] = O_WORKER; takeBatch(q);
            interrupted[q] = false;
#ifdef MUTANT_REQUEUE_BEFORE_FINISH
            /* work left beyond the budget: back to the run queue at once, before the batch
             * ran and the turn ended */
            if
            :: fifo[q].n > 0 -> wakePending[q] = true; phase[q] = SLEEPING;
                PLOCK; enqueueLocked(q, false, woken); PUNLOCK;
                if :: woken != 0 -> signalWoken(woken) :: else -> skip fi
            :: else -> skip
            fi;
#endif
            QUNLOCK_STATE(q)
        :: else -> endTurn(q, t, woken, after); handed = true             /* nothing to run */
        fi
    };
    if
    :: !handed ->
        /* run(&batch) */
        do
        :: batch.n == 0 -> break
        :: atomic { batch.n > 0 && interrupted[q] ->                      /* [T2] the relaxed load sees it */
                QLOCK_STATE(q);                                           /* returnUnrun */
                reachedIf(lifecycle[q] == ACCEPTING, 14);
                interrupted[q] = false;
                returnUnrun(q);
                if
                :: lifecycle[q] == SHUT_CANCEL -> removeCancellableWork(q)
                :: else -> skip
                fi;
                QUNLOCK_STATE(q)
            };
            break
        :: batch.n > 0 ->                                                 /* [T2] ... or not (yet) */
            atomic {
                popBatch(id);
                if
                :: kindOf(id) == ASYNC -> bodyStarts(q, id)               /* [T3] the async body */
                :: else -> skip
                fi
            };
            if
            :: kindOf(id) == ASYNC ->
                if
                :: id == 1 -> bodyOfItem1(t, a, woken, via2, left2)
                :: else -> skip
                fi;
                bodyEnds(q, id)
            :: else ->
                /* handOffReleasingThePoolThread: the caller gets the queue; this thread ends
                 * the turn (the caller's leave schedules the next one) */
                atomic {                                                  /* [T4] */
                    QLOCK_STATE(q);
                    owner[q] = O_SYNC; phase[q] = AWAITING;
                    returnUnrun(q);
                    if
                    :: lifecycle[q] == SHUT_CANCEL -> removeCancellableWork(q)
                    :: else -> skip
                    fi;
                    turnGranted[waiterOf[id]] = true;
                    turnGrantedWaits[waiterOf[id]] = false;               /* signal, under the lock */
#ifndef MUTANT_HANDOFF_FINISHES_TURN
                    inTurn[q]--; handed = true;
#endif
                    QUNLOCK_STATE(q)
                };
#ifndef MUTANT_HANDOFF_FINISHES_TURN
                break
#else
                skip
#endif
            fi;
            id = 0
        od;
        if
        :: !handed ->
            atomic { QLOCK_STATE(q); owner[q] = O_NONE; endTurn(q, t, woken, after) }   /* [T5] finishBatch */
        :: else -> skip
        fi
    :: else -> skip
    fi;
    handed = false;
    if
    :: after == 1 -> signalWoken(woken)                                   /* [T6] */
    :: after == 2 -> requeue(q, t, false)                                  /* [T6] PoolCore.requeue */
    :: else -> skip
    fi;
    after = 0
}

/* ------------------------------------------------------------------------------------------ */
/* Pool threads (PoolCore.threadMain, spinBeforeSleeping, runTurns)                            */
/* ------------------------------------------------------------------------------------------ */

/* The wait releases the mutex itself; the invariant check of PUNLOCK comes first. */
#define PUNLOCK_FOR_WAIT freeThreads = (isStopping || threadCount - blockedCount >= WIDTH); assertPool(freeThreads)

/* PoolState.goIdle, then worker.wakeUp.wait(releasing:) (the pool's lock held). */
inline goIdle(t, act) {
    isWoken[t] = false; idleStack[idleN] = t; idleN++;
    looking[t] = false; nLooking--;
    act = ACT_IDLE;
    PUNLOCK_FOR_WAIT;
    WAIT_RELEASING(pmutex, wakeUpWaits[t])
}

/* PoolCore.doze, the pool's lock held: PoolState.goDozing (the idle stack, dozingCount += 1, and
 * watchingCount += 1, which the model reads as dozingN), then the timed wait [D1]. */
inline goDoze(t, act) {
    isWoken[t] = false; idleStack[idleN] = t; idleN++;
    looking[t] = false; nLooking--;
    dozing[t] = true; dozingN++; reached(43);
    act = ACT_DOZE;
    PUNLOCK_FOR_WAIT;
    WAIT_RELEASING(pmutex, wakeUpWaits[t])
}

/* PoolState.endDozing for a doze whose time passed: the thread takes itself off the idle stack. */
inline removeIdle(t) {
    tj = 0;
    do
    :: tj < idleN && idleStack[tj] != t -> tj++
    :: else -> break
    od;
    assert(tj < idleN);
    do
    :: tj + 1 < idleN -> idleStack[tj] = idleStack[tj + 1]; tj++
    :: else -> break
    od;
    idleN--; idleStack[idleN] = 0; tj = 0
}

/* One look for work, with the pool's lock held (PoolCore.lookForWork): the run queue's head,
 * else this thread's own ring, else (counted in freeCount first) the head of another thread's
 * ring (stealHalf); `next` slots only a watcher takes ([P5]); found nothing: leave, watch, or sleep
 * (threadMain: retireIfSurplus, maySpin, goIdle, in the same lock hold). One step: a push to a
 * ring and its second read of freeCount (one step too, [O3]) fall before or after it; the
 * interleavings that split them only add a tell that finds the work already taken (README,
 * "Assumptions"). MUTANT_FREE_AFTER_SCAN splits it, as that mutant needs: the scan, then (a
 * step of its own, the lock still held) the add to freeCount. */
inline look(t, act, cur, ran) {
    freeLook[t] = false;
    if
    :: runQ.n > 0 -> dequeue(cur)
    :: runQ.n == 0 && ownQ[t].n > 0 -> localTakeHead(t, cur); reached(36)   /* its own ring */
    :: else ->
#ifndef MUTANT_FREE_AFTER_SCAN
        if :: !isFree[t] -> isFree[t] = true; freeCount++ :: else -> skip fi;
#endif
#ifndef MUTANT_NO_LOCAL_STEAL
        tj = 0;                                                           /* stealHalf */
        do
        :: tj < NT && cur == NONE ->
            if :: tj != t && ownQ[tj].n > 0 -> localTakeHead(tj, cur); reached(37) :: else -> skip fi;
            tj++
        :: else -> break
        od;
        tj = 0;
#endif
        skip
    fi;
#ifdef MUTANT_FREE_AFTER_SCAN
    if
    :: cur == NONE && !isFree[t] -> act = ACT_ADD_FREE                    /* the lock stays held */
    :: else -> lookDecides(t, act, cur, ran)
    fi
#else
    lookDecides(t, act, cur, ran)
#endif
}

/* Whether another thread's `next` slot holds a queue (read after the add to freeCount, or after
 * the watcher's spinningCount -= 1: Dekker's with [M2]). */
#define otherNextFilled(t) (((t) != 0 && nextSlot[0] != NONE) || ((t) != 1 && nextSlot[1] != NONE) \
    || ((t) != 2 && nextSlot[2] != NONE))
#if defined(MUTANT_NO_STEAL) || defined(MUTANT_PRIVATE_NEXT)
#define MUST_WATCH(t) false
#else
#define MUST_WATCH(t) (spinningCount + dozingN == 0 && otherNextFilled(t))
#endif

/* A watch window begins: the slots filled now are seen (their fills will have waited a window). */
inline seeNextSlots(t) {
    sawTurnover[t] = false;
    seenNext[t] = ((t != 0 && nextSlot[0] != NONE) -> 1 : 0) + ((t != 1 && nextSlot[1] != NONE) -> 2 : 0);
    seenNext[t] = seenNext[t] + ((t != 2 && nextSlot[2] != NONE) -> 4 : 0)
}

/* PoolCore.wakeWatcherIfNeeded, the lock held, when this thread takes work: a `next` slot holds a
 * queue and nobody is left to watch -> an idle thread is woken (it will watch). */
inline wakeWatcherIfNeeded(t, woken) {
#if !defined(MUTANT_NO_STEAL) && !defined(MUTANT_PRIVATE_NEXT)
    if :: spinningCount + dozingN == 0 && otherNextFilled(t) -> popIdleWorker(woken); reached(42) :: else -> skip fi
#else
    skip
#endif
}

/* The end of a look, the lock held: found -> run it (no longer counted free; a watcher woken if
 * needed); else leave (a surplus thread, or the pool stops), watch, or sleep. */
inline lookDecides(t, act, cur, ran) {
    if
    :: cur != NONE ->                                                     /* found */
        dozeNext[t] = false;
        if :: isFree[t] -> isFree[t] = false; freeCount-- :: else -> skip fi;
        wakeWatcherIfNeeded(t, woken);
        act = ACT_RUN; PUNLOCK;
        /* the signal after unlocking, in the same step (the woken thread's wait ends on isWoken,
         * set under the lock, with or without it) */
        if :: woken != 0 -> signalWoken(woken) :: else -> skip fi
    :: else ->
        if
        :: threadsShouldLeave || threadCount - blockedCount > WIDTH ->     /* retireIfSurplus */
            reachedIf(!threadsShouldLeave, 15); reachedIf(threadsShouldLeave, 16);
            threadCount--; looking[t] = false; nLooking--; isFree[t] = false; freeCount--;
            changedWaits = false;                                         /* changed.broadcast() */
            wakeWatcherIfNeeded(t, woken);                                /* it was woken to watch, maybe */
            act = ACT_LEAVE; PUNLOCK;
            if :: woken != 0 -> signalWoken(woken) :: else -> skip fi
        :: dozeNext[t] && !ran ->
            /* the last watch saw only turnover: a doze, then a watch (threadMain) */
            dozeNext[t] = false; goDoze(t, act)
        :: else ->
            dozeNext[t] = false;
            if
            /* PoolState.maySpin: at most half the threads (at least one) watch at a time; a thread
             * watches after a stretch of work, and while a `next` slot holds a queue that nobody
             * watches (mustWatch). The window begins: the slots filled now are seen. */
            :: (ran || MUST_WATCH(t)) && spinningCount < MAY_SPIN ->
                ran = false; spinningCount++; act = ACT_SPIN; seeNextSlots(t); PUNLOCK  /* spinBeforeSleeping */
            :: else -> ran = false; goIdle(t, act)
            fi
        fi
    fi
}

/* PoolState.wakeIfRunQueueOutnumbersSpinners, the lock held, after a watcher stole a `next` queue
 * (spinningCount already down by it): it counted as a thread that would look at the run queue,
 * so enqueues made while it watched woke nobody; it leaves without looking -> an idle thread is
 * woken if the run queue holds more than the remaining spinners take (f300b91). */
inline wakeIfRunQueueOutnumbersSpinners(woken) {
    reachedIf(runQ.n > spinningCount && idleN > 0, 45);
#ifndef MUTANT_STEALER_LEAVES_RUN_QUEUE
    if :: runQ.n > spinningCount -> popIdleWorker(woken) :: else -> skip fi
#else
    skip
#endif
}

/* [P5]'s steal: the first other slot whose fill this watcher has seen for a whole window. */
inline stealNextAfterPatience(t, cur) {
#if !defined(MUTANT_NEVER_STEAL) && !defined(MUTANT_NO_STEAL) && !defined(MUTANT_PRIVATE_NEXT)
    tj = 0;
    do
    :: tj < NT && cur == NONE ->
#ifdef MUTANT_STEAL_EARLY
        /* takes any filled slot, patience or not */
        if :: tj != t && nextSlot[tj] != NONE ->
#else
        if :: tj != t && nextSlot[tj] != NONE && ((seenNext[t] >> tj) & 1) ->
#endif
            assertLocality((seenNext[t] >> tj) & 1);
            cur = nextSlot[tj]; emptyNext(tj); reached(17)
        :: else -> skip
        fi;
        tj++
    :: else -> break
    od;
    tj = 0
#else
    skip
#endif
}

/* The top of threadMain's loop: this thread's own work, without the lock [P0], unless the run
 * queue is owed a look: mustLookAtRunQueue (it re-queued a queue counting on itself to take the
 * run queue's head: ghost freeLook, set in the same places), or one of two hints read without
 * the lock, dueHint > 0 and (its own work last) runnableHint > 0 — time is not modelled and a
 * hint may be stale, so any look may go to the lock instead [P1]. */
inline loopTop(t, act, cur, ran) {
    if
    :: atomic { !freeLook[t] && ownQ[t].n > 0 -> localTakeHead(t, cur); act = ACT_RUN; reached(38) }   /* [P0] */
    :: atomic { PLOCK; look(t, act, cur, ran) }                           /* [P1] */
    fi
}
/* The same, inside the step that ends runTurns with an empty `next` slot or runs a job: what
 * comes before it there touches only the thread's own variables (and its empty `next`, which
 * only it fills), so it shares the step; with the pool's lock busy the step waits there. */
#define LOOP_TOP_IN_STEP(t) \
    if \
    :: !freeLook[t] && ownQ[t].n > 0 -> localTakeHead(t, cur); act = ACT_RUN; reached(38) \
    :: PLOCK; look(t, act, cur, ran) \
    fi

inline poolThread(t) {
    byte act = ACT_IDLE; byte cur = NONE; bool ran = false; byte hops = 0;
    byte id = 0; byte a = A_NONE; byte woken = 0; bool handed = false; byte after = 0;
    bool via2 = false; bool left2 = false; bool turnWait = false;
    bool isInTurn = false;       /* PoolWorker.isInTurn */
    byte took = 0;               /* scratch: freeCount's read in pushLocal, a runnable in transit */
    bool looksNext = false;      /* requeue's callerLooksNext */
    Ring batch;                  /* PoolWorker.batch */
    atomic { PLOCK; look(t, act, cur, ran) };                             /* [P1]: its ring is empty */
    do
#ifdef JOB
    :: act == ACT_RUN && cur == QJ ->                                     /* run(.job) */
        atomic {                                                          /* [J1] runSynchronously, outside any turn */
            assertOnce(st[J_ITEM] == S_ACCEPTED);
            st[J_ITEM] = S_DONE; nFinished++; cur = NONE; ran = true; reached(35);
            LOOP_TOP_IN_STEP(t)                                           /* [P0] or [P1] */
        }
#endif
    :: act == ACT_RUN && cur != QJ ->
        /* runTurns(startingWith:) */
        isInTurn = true; hops = 0;
        do
        :: runPooledTurn(t, cur, id, a, woken, handed, after, via2, left2);
            if
            :: atomic {                                                   /* empty, or stolen */
                    nextSlot[t] == NONE -> isInTurn = false; cur = NONE; ran = true; hops = 0;
                    LOOP_TOP_IN_STEP(t)                                   /* [P0] or [P1] */
                };
                break
            :: atomic { nextSlot[t] != NONE ->                            /* [P2] takeNext */
                    cur = nextSlot[t]; emptyNext(t); hops++; reached(20) };
                if
                :: atomic { true ->                                       /* [P3] dueHint > 0 */
                    /* due delayed work waits at the run queue's head: time is not modelled, so
                       any hop may end here; the `next` queue goes to the run queue's tail and
                       this thread looks at its head (lookingWorker: mustLookAtRunQueue) */
                        reached(21);
                        PLOCK; enqueueLocked(cur, true, woken); freeLook[t] = true; PUNLOCK;
                        isInTurn = false; cur = NONE; ran = true; hops = 0
                    };
                    if :: woken != 0 -> signalWoken(woken) :: else -> skip fi;
                    loopTop(t, act, cur, ran);
                    break
                :: AT_HOP_LIMIT ->                                        /* [P3'] the hop limit */
                    /* requeue: behind the work waiting (the run queue's tail while anything
                       waits there, else this thread's own run queue) */
                    requeue(cur, t, true);
                    atomic { isInTurn = false; cur = NONE; ran = true; hops = 0 };
                    loopTop(t, act, cur, ran);
                    break
                :: BELOW_HOP_LIMIT -> skip                                /* the chain goes on */
                fi
            fi
        od
    :: act == ACT_SPIN ->
        /* [P4] the window: any length; the hints (runnableHint, localWorkNotices) only shorten it */
#ifdef MUTANT_SPIN_NO_RECHECK
        /* out of the window, straight to sleep: the run queue is not looked at again */
        atomic { PLOCK; spinningCount--; goIdle(t, act) }
#else
        /* [P5] the window ends: a fill seen at its start and still there has waited the patience:
         * the watcher takes it (stealNext's compare-and-swap; first slot first), returns with the
         * lock (stopSpinning) and runs it; else threadMain looks again in the same lock hold
         * (holdsLock): nothing can change in between. Its ring is empty: only its owner fills it,
         * and it found it empty. After a steal (f300b91), an idle thread is woken when the run
         * queue holds more than the remaining spinners take (wakeIfRunQueueOutnumbersSpinners):
         * enqueues made during the watch counted on this thread, which leaves without looking.
         * The bug it fixes needs a third thread idle beside the watcher and the busy owner of the
         * slot: only -DTHREE has one (MUTANT_STEALER_LEAVES_RUN_QUEUE; probe 45; the simulator's
         * stealer-leaves-run-queue on blocking-hops-three-threads). */
        atomic {
            PLOCK; spinningCount--; assert(ownQ[t].n == 0);
            stealNextAfterPatience(t, cur);
            if
            :: cur != NONE ->
                if :: isFree[t] -> isFree[t] = false; freeCount-- :: else -> skip fi;
                seenNext[t] = 0; sawTurnover[t] = false; wakeWatcherIfNeeded(t, woken);
                wakeIfRunQueueOutnumbersSpinners(woken); act = ACT_RUN; PUNLOCK
            :: else ->
                /* sawOnlyTurnover: the watch ends (the code: after two patiences) */
                dozeNext[t] = sawTurnover[t]; sawTurnover[t] = false;
                seenNext[t] = 0; look(t, act, cur, ran)
            fi
        };
        if :: woken != 0 -> signalWoken(woken) :: else -> skip fi
#endif
    :: act == ACT_IDLE ->
end_idle:
        /* [P6] the wait's return: while !isWoken { wait }, unlock; then the loop's top, where its
         * ring is empty (it went idle after finding it empty, and only it fills it), so it takes
         * the lock again and looks: one step here (the check in between changes nothing) */
        atomic {
            WOKEN(wakeUpWaits[t], isWoken[t]) -> noteSpurious(wakeUpWaits[t]);
            PLOCK;
            if
            :: !isWoken[t] -> PUNLOCK_FOR_WAIT; WAIT_RELEASING(pmutex, wakeUpWaits[t])
            :: else -> look(t, act, cur, ran)
            fi
        }
    :: act == ACT_DOZE ->
end_doze:
        /* [D1] the timed wait's return: woken (off the idle stack already), or its deadline passed
         * (the model has no clock: at any time) -> PoolState.endDozing (a timed-out dozer takes
         * itself off the idle stack and will look), watchingCount -= 1, then (the lock held) a
         * look, and a watch after it (ranSinceSpinning). MUTANT_DOZE_FOREVER: no deadline. */
        atomic {
#ifdef MUTANT_DOZE_FOREVER
            WOKEN(wakeUpWaits[t], isWoken[t]) -> noteSpurious(wakeUpWaits[t]);
            PLOCK;
            if
            :: !isWoken[t] -> PUNLOCK_FOR_WAIT; WAIT_RELEASING(pmutex, wakeUpWaits[t])
            :: else ->
#else
            PLOCK;
            if
            :: true ->
#endif
                wakeUpWaits[t] = false;
                dozing[t] = false; dozingN--;
                if
                :: !isWoken[t] -> removeIdle(t); looking[t] = true; nLooking++; freeLook[t] = true; reached(44)
                :: else -> skip
                fi;
                ran = true;
                look(t, act, cur, ran)
            fi
        }
    :: act == ACT_LEAVE -> break
#ifdef MUTANT_FREE_AFTER_SCAN
    :: act == ACT_ADD_FREE ->                                             /* the lock still held */
        atomic { isFree[t] = true; freeCount++; lookDecides(t, act, cur, ran) }
#endif
    od
}

active proctype T0() { poolThread(0) }
active proctype T1() { poolThread(1) }
/* The stand-in slot: started by beginBlocking (or never); with THREE, the pool thread T2. */
active proctype S() {
end_unstarted:
    standInStarted;
    poolThread(2)
}

/* ------------------------------------------------------------------------------------------ */
/* Producers                                                                                   */
/* ------------------------------------------------------------------------------------------ */

active proctype P0() {
    bool via = false; bool left = false; byte a = A_NONE; byte woken = 0; bool turnWait = false;
    bool isInTurn = false; byte took = 0; bool looksNext = false;
    asyncCall(QA, 1, NOT_POOL, a, woken);
#if !defined(NESTED) && !defined(END_DRAIN) && !defined(END_CANCEL)
    syncCall(QB, 2, NOT_POOL, W_P0, via, left, a, woken);
#endif
    producersDone++
}

active proctype P1() {
    bool via = false; bool left = false; byte a = A_NONE; byte woken = 0; bool turnWait = false;
    bool isInTurn = false; byte took = 0; bool looksNext = false;
#ifdef NESTED
#if !defined(END_POOL) && !defined(SMALL)
    syncCall(QB, 2, NOT_POOL, W_P1, via, left, a, woken);
#endif
#else
    syncCall(QA, 3, NOT_POOL, W_P1, via, left, a, woken);
#if !defined(END_POOL) && !defined(SMALL)
    asyncCall(QA, 4, NOT_POOL, a, woken);
#endif
#endif
    producersDone++
}

/* ------------------------------------------------------------------------------------------ */
/* The controller: suspend/resume and shutdown of queue A, then the pool's shutdown            */
/* ------------------------------------------------------------------------------------------ */

inline suspend(q) {
    atomic { QLOCK_STATE(q); suspendCount[q]++; interrupted[q] = true; QUNLOCK_STATE(q) }   /* [C1] */
}

inline resume(q, a, woken) {
    atomic {                                                              /* [C2] */
        QLOCK_STATE(q);
        assert(suspendCount[q] > 0);
        suspendCount[q]--;
        wakeWorkerIfNeeded(q, a);
        openFastPathIfIdle(q);
        QUNLOCK_STATE(q)
    };
    perform(q, a, NOT_POOL, woken)                                        /* [C3] */
}

/* Every accepted item of the queues in `qs` (a bit per queue) ran, or was dropped and counted. */
inline checkNothingLost(qs) {
    d_step {
        ti = 1;
        do
        :: ti <= NITEMS ->
            if
            :: (qs >> queueOf(ti)) & 1 ->
                settled = (st[ti] != S_ACCEPTED && st[ti] != S_RUNNING);
                assertNothingLost(settled)
            :: else -> skip
            fi;
            ti++
        :: else -> break
        od;
        ti = 0; tj = 0;
        do
        :: tj < NQ ->
            if
            :: (qs >> tj) & 1 ->
                reported = 0;
                ti = 1;
                do
                :: ti <= NITEMS -> if :: queueOf(ti) == tj && st[ti] == S_DROPPED -> reported++ :: else -> skip fi; ti++
                :: else -> break
                od;
                reported = (reported == cancelledWork[tj]);
                assertNothingLost(reported)
            :: else -> skip
            fi;
            tj++
        :: else -> break
        od;
        ti = 0; tj = 0
    }
}

/* QueueCore.beginShutdown */
inline beginShutdown(q, mode, a, woken) {
    atomic {                                                              /* [D1] */
        QLOCK_STATE(q);
        if
        :: isAccepting(q) ->
            lifecycle[q] = mode;
            if
            :: mode == SHUT_CANCEL -> removeCancellableWork(q); interrupted[q] = true
            :: else -> skip
            fi;
            wakeWorkerIfNeeded(q, a)
        :: else -> skip
        fi;
        QUNLOCK_STATE(q)
    };
    perform(q, a, NOT_POOL, woken)                                        /* [D2] */
}

/* SerialQueue.waitForWorkerExit (the controller is no pool thread: no stand-in) */
inline waitForWorkerExit(q) {
    atomic { QLOCK(q) };                                                  /* [X1] */
    QWAIT_WHILE(q, phase[q] != EXITED, workerExitedWaits[q]);             /* [X2] */
    atomic { QUNLOCK_STATE(q) }                                           /* [X3] */
}

/* Waits on the pool's `changed` until `cond` holds (waitUntilNoQueueIsAttached, stop(waiting:)). */
#define WAIT_CHANGED_UNTIL(cond) \
    atomic { PLOCK }; \
    do \
    :: atomic { !(cond) -> PUNLOCK_FOR_WAIT; WAIT_RELEASING(pmutex, changedWaits) }; \
        atomic { WOKEN(changedWaits, cond) -> noteSpurious(changedWaits); PLOCK } \
    :: else -> break \
    od; \
    atomic { PUNLOCK }

/* WorkerPool.shutdown(.drain) */
inline poolShutdown(a, woken, snapshot) {
    atomic {                                                              /* [U1] close() */
        PLOCK; isClosed = true;
        snapshot = (attached[QA] -> 1 : 0) | (attached[QB] -> 2 : 0);
        PUNLOCK
    };
    if :: snapshot & 1 -> beginShutdown(QA, SHUT_DRAIN, a, woken) :: else -> skip fi;   /* [U2] */
    if :: snapshot & 2 -> beginShutdown(QB, SHUT_DRAIN, a, woken) :: else -> skip fi;
#ifndef MUTANT_POOL_STOP_EARLY
    WAIT_CHANGED_UNTIL(nAttached == 0);                                   /* [U3] */
#endif
    atomic {                                                              /* [U4] stop() */
        PLOCK; isClosed = true; isStopping = true;
        if
        :: threadsShouldLeave ->
            do :: idleN > 0 -> popIdleWorker(woken) :: else -> break od
        :: else -> skip
        fi;
        PUNLOCK
    };
    if :: woken != 0 -> signalWoken(woken) :: else -> skip fi;
    WAIT_CHANGED_UNTIL(threadCount == 0);                                 /* [U5] */
    checkNothingLost(7)                                                   /* A, B and the job */
}

active proctype Controller() {
    byte a = A_NONE; byte woken = 0; byte snapshot = 0; bool isInTurn = false; byte took = 0;
    bool looksNext = false;
#if defined(END_DRAIN) || defined(END_CANCEL)
#ifdef END_DRAIN
#define SHUT_MODE SHUT_DRAIN
#else
#define SHUT_MODE SHUT_CANCEL
#endif
    suspend(QA);
    if
    :: resume(QA, a, woken); beginShutdown(QA, SHUT_MODE, a, woken)
    :: beginShutdown(QA, SHUT_MODE, a, woken); resume(QA, a, woken)   /* shutdown ends the suspension */
    fi;
    waitForWorkerExit(QA);
    checkNothingLost(1);
#elif defined(END_POOL)
    poolShutdown(a, woken, snapshot);
#elif !defined(NESTED)
    suspend(QA);
    resume(QA, a, woken);
#endif
    controllerDone = true
}

/* ------------------------------------------------------------------------------------------ */
/* The pool-level lost wake-up, as a state invariant                                            */
/* ------------------------------------------------------------------------------------------ */

/* A queue is never lost: whenever the run queue holds a queue (or a job), some pool thread will
 * look at it without being woken (it runs a turn, spins, or was woken); and nothing waits in the
 * `next` slot or the own run queue of a thread that is not going to run it (blocked, asleep).
 *
 * Work conservation (CHECK_WORK_CONSERVING): while a pool thread sleeps idle, what waits for a
 * thread (in the run queue, a `next` slot, or a thread's own run queue) is never more than the
 * threads that will look for work before running any (freeLook, spinning) or that are deciding
 * whether to publish the queue they just put in `next` (publishing); a ring whose owner pushed
 * and has not yet re-read freeCount is not counted (publishingLocal: it tells a free thread if
 * one is). A thread running a turn does not count: its work may run, or block, for any time. */
#define nextWaiting ((nextSlot[0] != NONE) + (nextSlot[1] != NONE) + (nextSlot[2] != NONE))
#define localWaiting ((publishingLocal[0] -> 0 : ownQ[0].n) + (publishingLocal[1] -> 0 : ownQ[1].n) \
                      + (publishingLocal[2] -> 0 : ownQ[2].n))
#define freeLookers (spinningCount + freeLook[0] + freeLook[1] + (freeLook[2] && standInStarted) \
                     + publishing[0] + publishing[1] + publishing[2])
#define lostNow ((runQ.n > 0 && nLooking == 0) \
         || ((nextSlot[0] != NONE || ownQ[0].n > 0) && !looking[0]) \
         || ((nextSlot[1] != NONE || ownQ[1].n > 0) && !looking[1]) \
         || ((nextSlot[2] != NONE || ownQ[2].n > 0) && !looking[2]))
/* Bounded: the `next` slots need one watcher between them (a watcher takes any fill that waits
 * the patience, and keeps watching while a slot is filled); the run queue and the rings need a
 * looker each, as before. */
#define wastedNow (idleN > 0 && (runQ.n + localWaiting > freeLookers || (nextWaiting > 0 && freeLookers + dozingN == 0)))
active proctype Monitor() {
end_watching:
    atomic {
        (lostNow
#ifdef CHECK_WORK_CONSERVING
         || wastedNow
#endif
        ) ->
        notLost = !lostNow;
        assertPool(notLost);
#ifdef CHECK_WORK_CONSERVING
        conserving = !wastedNow;
        assert(conserving)
#endif
    }
}
