import Synchronization

/// A lazy dependency: `dependsOn: Lazy<SearchIndexKey>.self` gives the factory a handle whose
/// ``value`` is made on first use, once, and kept: an expensive service stays off the startup path
/// until something needs it.
///
/// ```swift
/// builder.provide(SearchScreenKey.self, dependsOn: Lazy<SearchIndexKey>.self) { index in
///     SearchScreen { query in try await index.value.search(query) }
/// }
/// ```
///
/// The graph checks the edge like a direct one: a missing provider, a cycle through it (marked lazy in
/// the path) and a singleton holding a scoped service through it are reported. A singleton that only
/// lazy edges reach (or only other such singletons) is not made by the build: it is created on first
/// use, once for the graph even when many tasks ask at the same time, gets `didAdd` then, and
/// `willRemove` at shutdown before the services it depends on and after the ones that hold it. The
/// first use of a transient makes one instance, which the handle keeps. A handle made in a scope
/// resolves in that scope.
///
/// A handle does not keep its graph or scope alive: first used after the graph is shut down or the
/// scope closed, it throws ``ServiceGraphError/Code/graphShutDown`` or
/// ``ServiceGraphError/Code/scopeClosed``; a value made before stays readable.
public struct Lazy<Key: ServiceKey>: ServiceKey, Sendable {
    public typealias Value = Lazy<Key>

    @usableFromInline
    let cell: _LazyCell

    @usableFromInline
    init(handle: _ServiceHandle) {
        self.cell = _LazyCell(handle: handle)
    }

    /// The value, made on first use; later reads return the same value, without suspending.
    ///
    /// - Throws: ``ServiceGraphError``, as ``ServiceGraph/resolve(_:)`` or ``ServiceScope/resolve(_:)``
    ///   does; a failed first use is not kept, and the next read tries again.
    /// - Complexity: O(1) once made: one atomic load.
    @inlinable
    nonisolated(nonsending) public var value: Key.Value {
        get async throws {
            if let box = cell.madeBox() { return _unsafeValue(of: box, as: Key.Value.self) }
            return _unsafeValue(of: try await cell.make(Key.self), as: Key.Value.self)
        }
    }

    /// Whether the value has been made.
    public var isMade: Bool { cell.madeBox() != nil }

    /// `Lazy<Key>`.
    public static var serviceName: String { "Lazy<\(Key.serviceName)>" }

    @_documentation(visibility: private)
    @inlinable
    public static var _dependencyKind: _DependencyKind { .lazy }

    @_documentation(visibility: private)
    @inlinable
    public static var _dependencyTarget: any ServiceKey.Type { Key.self }

    @_documentation(visibility: private)
    @inlinable
    public static func _dependencyValue<Reader: _DependencyReading>(from reader: inout Reader) throws -> Value {
        Lazy(handle: reader._nextHandle(Key.self))
    }
}

/// The state of one ``Lazy`` handle: where it resolves, and the value once made (the instance as the
/// graph holds it, see ``_AnyBox``), published once with a releasing store.
///
/// Not API.
@_documentation(visibility: private)
public final class _LazyCell: Sendable {
    /// The value once made, retained by the cell (given back in `deinit`).
    private let made = Atomic<Unmanaged<_AnyBox>?>(nil)
    private let handle: _ServiceHandle
    /// The first use in progress, which later ones wait for: one value per handle, however many ask.
    private let making = Locked<Task<_AnyBox, any Error>?>(nil)

    init(handle: _ServiceHandle) {
        self.handle = handle
    }

    deinit {
        made.load(ordering: .acquiring)?.release()
    }

    /// The value, if made: one acquiring load.
    @usableFromInline
    func madeBox() -> _AnyBox? {
        made.load(ordering: .acquiring)?.takeUnretainedValue()
    }

    /// Makes the value, or waits for the use that is making it. Out of line: the cold path.
    @usableFromInline
    nonisolated(nonsending) func make<Key: ServiceKey>(_ key: Key.Type) async throws -> _AnyBox {
        let task = try making.withLock { making throws(ServiceGraphError) -> Task<_AnyBox, any Error>? in
            if madeBox() != nil { return nil }
            if let making {
                // This task is inside that first use (its chain came back through this handle): waiting
                // for it would never end.
                if _ResolutionTrail.isMaking(0, of: self) { throw Self.reentrantError(Key.serviceName) }
                return making
            }
            // A task of its own, so that a cancelled first user does not fail the others; it inherits
            // the resolution trail, so a factory asking for what it is making is still refused.
            let task = Task { [handle] in
                do {
                    let box = try await _ResolutionTrail.current.withValue(_ResolutionTrail(making: 0, of: self)) {
                        try await handle.box(of: key)
                    }
                    // The only writer: later uses find the value and never start a task.
                    made.store(.passRetained(box), ordering: .releasing)
                    self.making.withLock { $0 = nil }
                    return box
                } catch {
                    self.making.withLock { $0 = nil }
                    throw error
                }
            }
            making = task
            return task
        }
        guard let task else { return madeBox()! }
        return try await task.value
    }

    private static func reentrantError(_ name: String) -> ServiceGraphError {
        ServiceGraphError(
            .init(
                .reentrantResolution,
                key: name,
                message: "a lazy handle of \(name) was used while its first use was making \(name): a factory or "
                    + "hook that making it calls reads the same handle (a cycle the declared dependencies do not show)"
            )
        )
    }
}
