import Synchronization

/// Counts a scope's resolves in flight; once the scope closes, refuses new ones and tells the close
/// when the last returns, so that a close never releases what a resolve is still using.
///
/// Entering and leaving are one atomic operation each, no lock. Every change goes to one atomic
/// word, whose changes have a single order: a resolve either enters before the close begins (and
/// the close waits for it) or sees the close and is refused. The close's waiter lives with the
/// scope's state, under its lock (see ``ServiceScope``): part of the scope, not an allocation of its
/// own.
struct ResolveGate: ~Copyable, Sendable {
    /// Twice the number of resolves in flight, plus one once closing.
    private let word = Atomic<Int>(0)

    private static let closing = 1
    private static let resolve = 2

    /// What ``enter()`` did.
    enum Entry {
        /// Counted as in flight.
        case entered
        /// Refused: the scope is closing.
        case refused
        /// Refused, and the count this attempt held for a moment was the last in flight: the close
        /// may be waiting, as it is for a resolve that leaves.
        case refusedLast
    }

    /// Counts a resolve as in flight; refuses it, counting nothing, once closing.
    func enter() -> Entry {
        let before = word.wrappingAdd(Self.resolve, ordering: .acquiring).oldValue
        guard before & Self.closing == 0 else { return leave() ? .refusedLast : .refused }
        return .entered
    }

    /// Ends a resolve counted by ``enter()``.
    ///
    /// - Returns: Whether it was the last in flight of a closing scope: the close may be waiting.
    func leave() -> Bool {
        word.wrappingSubtract(Self.resolve, ordering: .releasing).newValue == Self.closing
    }

    /// Whether the scope is closing: new resolves are refused.
    var isClosing: Bool {
        word.load(ordering: .relaxed) & Self.closing != 0
    }

    /// Whether the scope is closing and no resolve is in flight.
    var isDrained: Bool {
        word.load(ordering: .acquiring) == Self.closing
    }

    /// Refuses new resolves from now on if none is in flight, and says whether it did: a close that
    /// finds nothing to wait for closes without suspending.
    func closeIfIdle() -> Bool {
        word.compareExchange(expected: 0, desired: Self.closing, ordering: .acquiringAndReleasing).exchanged
    }

    /// Refuses new resolves from now on.
    func close() {
        word.bitwiseOr(Self.closing, ordering: .relaxed)
    }
}
