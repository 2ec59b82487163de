import Synchronization

/// The immutable heart of a built graph: the key table, the flat edge list, the factories and the
/// singletons, and the only owner of raw memory in the library.
///
/// Everything the resolve path touches is a raw buffer indexed by slot, so resolving is a table lookup
/// and a few loads, with no hashing of strings, no locks and no allocation for singletons. Code outside
/// this folder reads the buffers through the accessors below, or walks a chain through the
/// ``_UnsafeResolver`` the core hands out to factory thunks, never through the pointers themselves.
///
/// The core's other unsafe parts live next to it: ``_UnsafeResolver`` (the pointer view and argument
/// cursor of one factory call), ``ScopeCells`` (a scope's atomic instance cells), ``ThreadTrail`` (the
/// thread-local trail) and ``_AnyBox/_unsafeValue(as:)`` (the unchecked read of a box).
///
/// `@unchecked Sendable`: the buffers are written only in `init`, except the singleton slots and the
/// creation order, which only the build's coordinator writes, each slot once, before the graph is
/// published (see ``storeSingleton(_:at:)``), and the factories of singletons, released once the build
/// is done.
@usableFromInline
final class _GraphCore: @unchecked Sendable {
    /// Per slot: the key, lifetime and registration site, for errors and dumps.
    let records: [ServiceRecord]
    /// Per slot: the key's name, made on first use.
    let keyNames: KeyNames
    /// The distinct `#fileID`s of the registrations (``ServiceRecord/fileIndex``).
    let files: [StaticString]
    /// Per slot: whether it depends (transitively) on a scoped service.
    let needsScope: [Bool]
    /// How long a lifecycle hook may run before it is abandoned; nil waits forever.
    let hookTimeout: Duration?
    /// How long an asynchronous singleton or scoped factory may run before it is abandoned.
    let factoryTimeout: Duration?
    /// The instances whose hooks this graph runs (see ``HookClaims``).
    let hookClaims: HookClaims
    /// Where events go.
    let events: EventSink
    /// Whether top-level resolves send events (checked on the resolve path, so a plain flag).
    @usableFromInline
    let reportsResolves: Bool
    /// Where `resolveSynchronously` keeps the services the current thread is making.
    let threadTrail = ThreadTrail.Slot.shared
    /// Set once by the graph's shutdown; read by every `resolve` through ``isShutDown()``.
    private let shutDownFlag = Atomic<Bool>(false)
    /// The singletons in the order they were created (a topological order), released in reverse: the
    /// graph's one creation order. Written only by the build's coordinator, before the graph is published.
    private(set) var creationOrder: [Int] = []

    // Raw buffers, allocated in `init` and freed in `deinit`, so reading them on the resolve path costs
    // no reference counting and no bounds bookkeeping.

    /// The key table, copied into two buffers (identities, slots): see ``KeyTable``.
    @usableFromInline
    let keyIdentities: UnsafeMutableBufferPointer<UInt>
    @usableFromInline
    let keySlots: UnsafeMutableBufferPointer<Int32>
    @usableFromInline
    let keyShift: UInt
    /// Per slot: the singleton's box, retained by the core; nil when not a singleton or not built yet.
    @usableFromInline
    let singletonRefs: UnsafeMutablePointer<Unmanaged<_AnyBox>?>
    /// Per slot: the factory, retained by the core; nil once released (a built singleton's).
    @usableFromInline
    let factoryRefs: UnsafeMutableBufferPointer<Unmanaged<_AnyFactory>?>
    /// Per slot: its lifetime.
    @usableFromInline
    let lifetimes: UnsafeMutableBufferPointer<Lifetime>
    /// Per slot: whether it can be resolved without suspending (see ``ResolutionTraits``).
    @usableFromInline
    let resolvesSynchronouslyFlags: UnsafeMutableBufferPointer<Bool>
    /// The dependencies of slot `s` are `dependencySlots[dependencyStart[s]..<dependencyStart[s + 1]]`.
    @usableFromInline
    let dependencyStart: UnsafeMutableBufferPointer<Int32>
    @usableFromInline
    let dependencySlots: UnsafeMutableBufferPointer<Int32>

    /// Makes the core of a valid plan (no missing edges, no cycles); the plan is not kept.
    init(
        plan: GraphPlan,
        hookTimeout: Duration?,
        factoryTimeout: Duration?,
        parentClaims: HookClaims?,
        events: EventSink,
        reportsResolves: Bool
    ) {
        self.hookTimeout = hookTimeout
        self.factoryTimeout = factoryTimeout
        self.hookClaims = HookClaims(parent: parentClaims)
        self.events = events
        self.reportsResolves = reportsResolves
        let count = plan.count
        var files: [StaticString] = []
        var fileIndex: [UInt: UInt32] = [:]
        var records: [ServiceRecord] = []
        records.reserveCapacity(count)
        for (slot, provider) in plan.providers.enumerated() {
            let file = provider.site.fileID
            let address = file.hasPointerRepresentation ? UInt(bitPattern: file.utf8Start) : 0
            let index: UInt32
            if let known = fileIndex[address], address != 0 {
                index = known
            } else {
                index = UInt32(files.count)
                files.append(file)
                fileIndex[address] = index
            }
            records.append(
                ServiceRecord(
                    key: provider.key,
                    line: UInt32(truncatingIfNeeded: provider.site.line),
                    fileIndex: index,
                    lifetime: provider.lifetime,
                    isOverride: plan.overridden[slot]
                )
            )
        }
        self.records = records
        self.keyNames = KeyNames { [records] in records.map(\.key) }
        self.files = files
        let traits = ResolutionTraits(plan)
        self.needsScope = traits.needsScope
        creationOrder.reserveCapacity(count)

        // Safety (all buffers below): allocated and fully initialized here, freed in `deinit`.
        self.keyIdentities = .allocate(capacity: plan.table.identities.count)
        _ = keyIdentities.initialize(from: plan.table.identities)
        self.keySlots = .allocate(capacity: plan.table.slots.count)
        _ = keySlots.initialize(from: plan.table.slots.lazy.map { Int32(truncatingIfNeeded: $0) })
        self.keyShift = plan.table.shift
        self.singletonRefs = .allocate(capacity: max(count, 1))
        singletonRefs.initialize(repeating: nil, count: count)
        self.factoryRefs = .allocate(capacity: count)
        _ = factoryRefs.initialize(from: plan.providers.lazy.map { Unmanaged.passRetained($0.factory) })
        self.lifetimes = .allocate(capacity: count)
        _ = lifetimes.initialize(from: plan.providers.lazy.map { $0.lifetime })
        self.resolvesSynchronouslyFlags = .allocate(capacity: count)
        _ = resolvesSynchronouslyFlags.initialize(from: traits.resolvesSynchronously)
        let dependencyStart = UnsafeMutableBufferPointer<Int32>.allocate(capacity: count + 1)
        let dependencySlots = UnsafeMutableBufferPointer<Int32>.allocate(capacity: max(plan.edges.edgeCount, 1))
        var edge = 0
        for slot in 0..<count {
            dependencyStart.initializeElement(at: slot, to: Int32(truncatingIfNeeded: edge))
            for target in plan.edges.dependencies(of: slot) {
                dependencySlots.initializeElement(at: edge, to: Int32(truncatingIfNeeded: target))
                edge += 1
            }
        }
        dependencyStart.initializeElement(at: count, to: Int32(truncatingIfNeeded: edge))
        self.dependencyStart = dependencyStart
        self.dependencySlots = dependencySlots
    }

    deinit {
        releaseSingletons()
        releaseFactories { _ in true }
        keyIdentities.deallocate()
        keySlots.deallocate()
        singletonRefs.deinitialize(count: count)
        singletonRefs.deallocate()
        factoryRefs.deallocate()
        lifetimes.deallocate()
        resolvesSynchronouslyFlags.deallocate()
        dependencyStart.deallocate()
        dependencySlots.deallocate()
    }

    var count: Int { records.count }

    /// The number of dependency edges.
    var edgeCount: Int { Int(dependencyStart[count]) }

    /// The slots `slot` depends on, in declaration order: how code outside the core reads the edges.
    func dependencies(of slot: Int) -> LazyMapCollection<Range<Int>, Int> {
        _internalInvariant(slot >= 0 && slot < count, "slot \(slot) out of range")
        return (Int(dependencyStart[slot])..<Int(dependencyStart[slot + 1])).lazy.map { Int(self.dependencySlots[$0]) }
    }

    /// The lifetime of the service at `slot`.
    @inlinable
    func lifetime(of slot: Int) -> Lifetime {
        _internalInvariant(slot >= 0 && slot < lifetimes.count, "slot \(slot) out of range")
        return lifetimes[slot]
    }

    /// Whether the service at `slot` can be resolved without suspending (see ``ResolutionTraits``).
    @inlinable
    func resolvesSynchronously(_ slot: Int) -> Bool {
        _internalInvariant(slot >= 0 && slot < resolvesSynchronouslyFlags.count, "slot \(slot) out of range")
        return resolvesSynchronouslyFlags[slot]
    }

    func name(_ slot: Int) -> String { keyNames.name(slot) }

    func site(_ slot: Int) -> RegistrationSite {
        let record = records[slot]
        return RegistrationSite(fileID: files[Int(record.fileIndex)].description, line: Int(record.line))
    }

    /// Whether the graph has shut down; out of line, so the flag's atomic type stays out of the
    /// inlinable resolve path's signature (a call and a relaxed load).
    @usableFromInline
    func isShutDown() -> Bool {
        shutDownFlag.load(ordering: .relaxed)
    }

    /// Makes every later `resolve` throw ``ServiceGraphError/Code/graphShutDown``.
    func markShutDown() {
        shutDownFlag.store(true, ordering: .releasing)
    }

    /// The slot of `key`, or nil.
    ///
    /// - Complexity: O(1) on average.
    @inlinable
    @inline(__always)
    func slot<Key: ServiceKey>(of key: Key.Type) -> Int? {
        let bits = UInt(bitPattern: Key.keyID)
        let bucket = _KeyProbe.bucket(for: bits, in: keyIdentities, shift: keyShift)
        guard keyIdentities[bucket] != 0 else { return nil }
        return Int(keySlots[bucket])
    }
}

// MARK: - Factories

extension _GraphCore {
    /// The factory at `slot`; only for slots whose factory is still held.
    @usableFromInline
    func factory(at slot: Int) -> _AnyFactory {
        _internalInvariant(slot >= 0 && slot < factoryRefs.count, "slot \(slot) out of range")
        _internalInvariant(factoryRefs[slot] != nil, "the factory of slot \(slot) was released")
        // Safety: the core retains the factory until `releaseFactories`, which the build calls only for
        // built singletons, whose factories nothing asks for again.
        return factoryRefs[slot].unsafelyUnwrapped.takeUnretainedValue()
    }

    /// Releases the factories of the slots `where` selects. Called by the build, once every singleton
    /// exists, for the singletons' factories: the graph never runs them again.
    func releaseFactories(where shouldRelease: (Int) -> Bool) {
        for slot in factoryRefs.indices where shouldRelease(slot) {
            // Safety: gives back the retain taken in `init`, once (the slot is nil afterwards).
            factoryRefs[slot]?.release()
            factoryRefs[slot] = nil
        }
    }
}

// MARK: - Singletons

extension _GraphCore {
    /// The singleton at `slot` as a `Value`, or nil when the slot holds no singleton.
    ///
    /// - Complexity: O(1), no lock, no allocation; retains only the value.
    @inlinable
    func singleton<Value: Sendable>(at slot: Int, as type: Value.Type) -> Value? {
        withUnsafeResolver(in: nil) { $0.singleton(at: slot, as: type) }
    }

    /// Stores a created singleton. Only the build's coordinator calls this, once per slot, before any
    /// reader of that slot exists (its dependents start after the write, and the graph is returned after
    /// the build): the slots need no synchronization.
    func storeSingleton(_ box: _AnyBox, at slot: Int) {
        _internalInvariant(slot >= 0 && slot < count, "slot \(slot) out of range")
        _internalInvariant(singletonRefs[slot] == nil, "the singleton at slot \(slot) was stored twice")
        _internalInvariant(lifetimes[slot] == .singleton, "slot \(slot) is not a singleton")
        // Safety: the core takes one retain, given back in `releaseSingletons`.
        singletonRefs[slot] = .passRetained(box)
        creationOrder.append(slot)
    }

    /// Drops every singleton, most recently created first: a failed build's rollback, and the core's
    /// `deinit`. The creation order stays, for the failed build's report.
    func releaseSingletons() {
        for slot in creationOrder.reversed() {
            // Safety: gives back the retain `storeSingleton` took, once (the slot is nil afterwards).
            singletonRefs[slot]?.release()
            singletonRefs[slot] = nil
        }
    }
}
