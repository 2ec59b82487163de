// Public, so that the inlinable `resolve` can read the flags in the caller's code; the rest of the
// library imports Synchronization internally.
public import Synchronization

/// What sends a graph's `resolve` off its fast path, in one word the inlined `resolve` tests once: the
/// graph has shut down (set once, by its shutdown), or resolves send events (fixed when it is built).
@usableFromInline
struct _ResolveFlags: ~Copyable, Sendable {
    @usableFromInline
    let word: Atomic<UInt8>

    @usableFromInline
    static var shutDown: UInt8 { 1 }
    static var reportsResolves: UInt8 { 2 }

    init(reportsResolves: Bool) {
        word = Atomic(reportsResolves ? Self.reportsResolves : 0)
    }

    /// Whether a `resolve` can take its fast path: the graph is running and resolves send no events. A
    /// relaxed load: a `resolve` racing the shutdown may still succeed, one after it sees the flag.
    @inlinable
    @inline(__always)
    var allowsFastPath: Bool { word.load(ordering: .relaxed) == 0 }

    /// Whether the graph has shut down (a relaxed load, as ``allowsFastPath``).
    @inlinable
    @inline(__always)
    var isShutDown: Bool { word.load(ordering: .relaxed) & Self.shutDown != 0 }

    func setShutDown() {
        word.bitwiseOr(Self.shutDown, ordering: .releasing)
    }
}
