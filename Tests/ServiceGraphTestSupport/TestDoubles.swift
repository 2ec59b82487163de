import Foundation
import ServiceGraph
import Synchronization
import Testing

/// A value behind a lock the thread sanitizer understands (`Synchronization.Mutex` on Linux is not
/// visible to it, so tests that share state through one would report false races).
package final class Locked<State>: @unchecked Sendable {
    private let lock = NSLock()
    private var state: State

    package init(_ state: State) {
        self.state = state
    }

    package func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}

/// A thread-safe, ordered log of events, shared by the doubles of one test.
/// How many ``LiveInstance``s made with it are alive. Each suite that checks for leaks or double
/// releases keeps its own, so that suites running in parallel do not count each other's instances.
package final class LiveCounter: Sendable {
    package init() {}

    private let live = Atomic<Int>(0)
    package var count: Int { live.load(ordering: .relaxed) }
    fileprivate func add(_ delta: Int) { live.add(delta, ordering: .relaxed) }
}

/// An object that counts itself in a ``LiveCounter`` while it exists: a value that holds one shows
/// whether the graph released it, and released it once.
package final class LiveInstance: Sendable {
    package let id: Int
    private let counter: LiveCounter
    package init(_ id: Int, in counter: LiveCounter) {
        self.id = id
        self.counter = counter
        counter.add(1)
    }
    deinit { counter.add(-1) }
}

/// A graph or scope, filled in after it exists, for factories that reach back into it.
package final class Captured<Target: AnyObject & Sendable>: Sendable {
    private let target = Locked<Target?>(nil)

    package init() {}

    package func fill(_ value: Target?) { target.withLock { $0 = value } }

    package var value: Target {
        get throws {
            guard let value = target.withLock({ $0 }) else { throw TestFailure("not filled in yet") }
            return value
        }
    }
}

package final class EventLog: Sendable {
    package init() {}

    private let entries = Locked<[String]>([])

    package func record(_ entry: String) { entries.withLock { $0.append(entry) } }
    package var all: [String] { entries.withLock { $0 } }

    package func index(of entry: String) -> Int? { all.firstIndex(of: entry) }
    package func count(of entry: String) -> Int { all.filter { $0 == entry }.count }
}

/// A service that logs its hooks and can be told to fail in either.
package final class HookedService: LifecycleHooks, Sendable {
    package let name: String
    package let log: EventLog
    package let failDidAdd: Bool
    package let failWillRemove: Bool

    package init(_ name: String, log: EventLog, failDidAdd: Bool = false, failWillRemove: Bool = false) {
        self.name = name
        self.log = log
        self.failDidAdd = failDidAdd
        self.failWillRemove = failWillRemove
        log.record("init \(name)")
    }

    package func didAdd() async throws {
        log.record("didAdd \(name)")
        if failDidAdd { throw TestFailure("didAdd of \(name) failed on purpose") }
    }

    package func willRemove() async throws {
        log.record("willRemove \(name)")
        if failWillRemove { throw TestFailure("willRemove of \(name) failed on purpose") }
    }
}

/// An error a double throws on purpose.
package struct TestFailure: Error, Equatable, CustomStringConvertible {
    package let description: String

    package init(_ description: String) {
        self.description = description
    }
}

/// Holds weak references to instances, to prove the graph let them go.
package final class WeakRegistry: Sendable {
    package init() {}

    private final class WeakBox: @unchecked Sendable {
        weak var object: AnyObject?
        init(_ object: AnyObject) { self.object = object }
    }

    private let boxes = Locked<[WeakBox]>([])

    package func track<T: AnyObject>(_ object: T) -> T {
        boxes.withLock { $0.append(WeakBox(object)) }
        return object
    }

    package var tracked: Int { boxes.withLock { $0.count } }
    package var alive: Int { boxes.withLock { $0.filter { $0.object != nil }.count } }
}

/// Counts how many times something happened, from any task.
package final class Tally: Sendable {
    package init() {}

    private let value = Atomic<Int>(0)

    @discardableResult
    package func increment() -> Int { value.add(1, ordering: .relaxed).newValue }
    package var count: Int { value.load(ordering: .relaxed) }
}

/// Lets `count` tasks wait until all of them have arrived; proves work runs concurrently.
package actor Barrier {
    private let count: Int
    private var arrived = 0
    private var waiters: [CheckedContinuation<Void, Never>] = []

    package init(count: Int) {
        self.count = count
    }

    package func arriveAndWait() async {
        arrived += 1
        if arrived == count {
            for waiter in waiters { waiter.resume() }
            waiters.removeAll()
        } else {
            await withCheckedContinuation { waiters.append($0) }
        }
    }
}

/// Runs `operation`, failing the test if it takes longer than `limit` (a guard against a hang, not a
/// timing assertion). The operation runs in a task of its own, so even one that ignores cancellation
/// and never returns turns into a failure instead of a hung test run. Under a sanitizer, whose code
/// runs several times slower (and slower still on a busy machine), the limit is four times as long.
package func withDeadline<T: Sendable>(
    _ requested: Duration = .seconds(120),
    _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let limit = ProcessEnvironment.isSanitizerRun ? requested * 4 : requested
    let outcome = Locked<CheckedContinuation<T, any Error>?>(nil)
    let finish = { @Sendable (result: Result<T, any Error>) in
        let waiter = outcome.withLock { waiter in
            defer { waiter = nil }
            return waiter
        }
        waiter?.resume(with: result)
    }
    var work: Task<Void, Never>?
    var timer: Task<Void, Never>?
    defer {
        work?.cancel()
        timer?.cancel()
    }
    return try await withCheckedThrowingContinuation { continuation in
        outcome.withLock { $0 = continuation }
        work = Task {
            do {
                finish(.success(try await operation()))
            } catch {
                finish(.failure(error))
            }
        }
        timer = Task {
            try? await Task.sleep(for: limit)
            finish(.failure(TestFailure("operation did not finish within \(limit)")))
        }
    }
}

// Keys shared by several test files.
package enum IntKey: ServiceKey { package typealias Value = Int }
package enum OtherIntKey: ServiceKey { package typealias Value = Int }
package enum StringKey: ServiceKey { package typealias Value = String }
package enum DoubleKey: ServiceKey { package typealias Value = Double }

package enum ServiceA: ServiceKey { package typealias Value = HookedService }
package enum ServiceB: ServiceKey { package typealias Value = HookedService }
package enum ServiceC: ServiceKey { package typealias Value = HookedService }
package enum ServiceD: ServiceKey { package typealias Value = HookedService }
package enum ServiceE: ServiceKey { package typealias Value = HookedService }
