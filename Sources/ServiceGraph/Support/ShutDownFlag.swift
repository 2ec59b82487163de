// Public, so that the inlinable `resolve` can read the flag in the caller's code; the rest of the
// library imports Synchronization internally.
public import Synchronization

/// Whether a graph has shut down: set once by its shutdown, read by every `resolve` (inlined there: a
/// call would cost a created singleton's `resolve` more than the rest of it).
@usableFromInline
struct _ShutDownFlag: ~Copyable, Sendable {
    @usableFromInline
    let word = Atomic<Bool>(false)

    init() {}

    /// A relaxed load: a `resolve` racing the shutdown may still succeed, one after it sees the flag.
    @inlinable
    @inline(__always)
    var isSet: Bool { word.load(ordering: .relaxed) }

    func set() {
        word.store(true, ordering: .releasing)
    }
}
