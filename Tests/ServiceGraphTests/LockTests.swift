import Foundation
import Synchronization
import Testing

@testable import ServiceGraph

/// The library's lock (``Locked``, and ``PlatformMutex`` under it): on Linux a futex lock of its own,
/// taken with one atomic operation, whose waiters sleep in the kernel. Run on threads of their own, not
/// the tasks' pool, which a thread sleeping on a lock or waiting for another would hold up.
@Suite("The library's lock")
struct LockTests {
    /// Two counters that only move together under the lock: a lost update or a torn read shows as a
    /// difference, or as a total short of the increments made.
    struct Pair {
        var first = 0
        var second = 0
        var torn = 0
    }

    @Test func manyThreadsUpdatingUnderTheLockLoseNothing() {
        let pair = Locked(Pair())
        let (threads, rounds) = (8, 20_000)
        let update: @Sendable () -> Void = {
            for _ in 0..<rounds {
                pair.withLock { pair in
                    if pair.first != pair.second { pair.torn += 1 }
                    pair.first += 1
                    pair.second += 1
                }
            }
        }
        // Each read after the threads is made only once they have finished: a lock that never lets go
        // would leave it waiting too.
        guard runOnThreads(Array(repeating: update, count: threads)) else { return }
        let result = pair.withLock { $0 }
        #expect(result.first == threads * rounds)
        #expect(result.second == threads * rounds)
        #expect(result.torn == 0)
    }

    /// A thread that finds the lock held long enough to stop spinning sleeps on it, and is woken by the
    /// unlock, after which it sees what the holder wrote.
    @Test func aWaiterSleepsUntilTheHolderLetsGoAndSeesItsWrites() {
        let log = Locked([String]())
        let held = Atomic<Bool>(false)
        let waiterIsTrying = Atomic<Bool>(false)
        let finished = runOnThreads([
            {
                log.withLock { log in
                    held.store(true, ordering: .releasing)
                    // Held until the waiter is trying, and long past its spinning.
                    while !waiterIsTrying.load(ordering: .acquiring) { Thread.sleep(forTimeInterval: 0.001) }
                    Thread.sleep(forTimeInterval: 0.05)
                    log.append("holder's write")
                }
            },
            {
                while !held.load(ordering: .acquiring) { Thread.sleep(forTimeInterval: 0.001) }
                waiterIsTrying.store(true, ordering: .releasing)
                log.withLock { log in log.append("waiter saw: \(log.joined(separator: ", "))") }
            },
        ])
        guard finished else { return }
        #expect(log.withLock { $0 } == ["holder's write", "waiter saw: holder's write"])
    }

    /// Many threads asleep on the lock at once are each woken in turn: none is left asleep.
    @Test func everySleeperIsWoken() {
        let count = Locked(0)
        let held = Atomic<Bool>(false)
        let waiters = 6
        let holder: @Sendable () -> Void = {
            count.withLock { _ in
                held.store(true, ordering: .releasing)
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        let waiter: @Sendable () -> Void = {
            while !held.load(ordering: .acquiring) { Thread.sleep(forTimeInterval: 0.001) }
            count.withLock { $0 += 1 }
        }
        guard runOnThreads([holder] + Array(repeating: waiter, count: waiters)) else { return }
        #expect(count.withLock { $0 } == waiters)
    }

    /// Runs each of `bodies` on a thread of its own and waits for them all; records an issue (a lock that
    /// never lets a thread go) and returns false rather than hanging when they have not finished within a
    /// minute.
    private func runOnThreads(_ bodies: [@Sendable () -> Void]) -> Bool {
        let done = DispatchSemaphore(value: 0)
        for body in bodies {
            Thread {
                body()
                done.signal()
            }.start()
        }
        for _ in bodies {
            guard done.wait(timeout: .now() + 60) == .success else {
                Issue.record("a thread did not finish within a minute: a waiter left asleep, or a lock never let go")
                return false
            }
        }
        return true
    }
}
