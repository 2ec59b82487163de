import Foundation
import ServiceGraph

/// Lets a hook or factory wait until the test opens it.
package actor Gate {
    package init() {}

    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    package func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    package func open() {
        isOpen = true
        for waiter in waiters { waiter.resume() }
        waiters = []
    }
}

extension EventLog {
    /// Waits (polling, with a deadline) until `entry` was recorded.
    package func waitFor(_ entry: String, within limit: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now + limit
        while index(of: entry) == nil {
            guard ContinuousClock.now < deadline else { throw TestFailure("\(entry) was never recorded") }
            try await Task.sleep(for: .milliseconds(2))
        }
    }
}
