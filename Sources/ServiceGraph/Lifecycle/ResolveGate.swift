import Synchronization

/// Counts a scope's resolves in flight; once the scope closes, refuses new ones and lets the close
/// wait for the last to return, so that a close never releases what a resolve is still using.
///
/// Entering and leaving are one atomic operation each, no lock. Every change goes to one atomic
/// word, whose changes have a single order: a resolve either enters before the close begins (and
/// the close waits for it) or sees the close and is refused.
final class ResolveGate: Sendable {
    /// Twice the number of resolves in flight, plus one once closing.
    private let word = Atomic<Int>(0)
    /// The close waiting for the resolves in flight to return.
    private let drainWaiter = Locked<CheckedContinuation<Void, Never>?>(nil)

    private static let closing = 1
    private static let resolve = 2

    /// Counts a resolve as in flight; false, counting nothing, once closing.
    func enter() -> Bool {
        let before = word.wrappingAdd(Self.resolve, ordering: .acquiring).oldValue
        guard before & Self.closing == 0 else {
            leave()
            return false
        }
        return true
    }

    /// Ends a resolve counted by ``enter()``.
    func leave() {
        let after = word.wrappingSubtract(Self.resolve, ordering: .releasing).newValue
        guard after == Self.closing else { return }
        // The last resolve of a closing scope: the close may be waiting.
        let waiter = drainWaiter.withLock { waiter in
            defer { waiter = nil }
            return waiter
        }
        waiter?.resume()
    }

    /// Whether the scope is closing: new resolves are refused.
    var isClosing: Bool {
        word.load(ordering: .relaxed) & Self.closing != 0
    }

    /// Whether the scope is closing and no resolve is in flight: ``drained()`` would return at once.
    var isDrained: Bool {
        word.load(ordering: .acquiring) == Self.closing
    }

    /// Refuses new resolves from now on.
    func close() {
        word.bitwiseOr(Self.closing, ordering: .relaxed)
    }

    /// Waits until no resolve is in flight; only after ``close()``, and by one caller.
    func drained() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            // Checked under the lock that the last resolve takes to find the waiter, so that either it
            // finds the waiter or this finds it gone.
            let isDrained = drainWaiter.withLock { stored in
                if word.load(ordering: .acquiring) == Self.closing { return true }
                stored = waiter
                return false
            }
            if isDrained { waiter.resume() }
        }
    }
}
