import Synchronization

/// The immutable heart of a built graph: the key table, the flat edge list, the factories and the
/// singletons, and with its key identities (``_KeyIdentities``) the only owner of raw memory in the
/// library.
///
/// Everything the resolve path touches is a raw buffer indexed by slot, so resolving is a table lookup
/// and a few loads, with no hashing of strings, no locks and no allocation for singletons. Code outside
/// this folder reads the buffers through the accessors below, or walks a chain through the
/// ``_UnsafeResolver`` the core hands out to factory thunks, never through the pointers themselves.
///
/// The core's other unsafe parts live next to it: ``_UnsafeResolver`` (the pointer view and argument
/// cursor of one factory call), ``ScopeCells`` (a scope's atomic instance cells), ``_ThreadTrail`` (the
/// thread-local trail) and ``_unsafeValue(of:as:)`` (the unchecked read of an instance).
///
/// `@unchecked Sendable`: the buffers are written only in `init`, except the singleton slots and the
/// creation order, which only the build's coordinator writes, each slot once, before the graph is
/// published (see ``storeSingleton(_:at:)``), and the factories of singletons, released once the build
/// is done.
@usableFromInline
final class _GraphCore: @unchecked Sendable {
    /// Per slot: the registration site, for errors and dumps (the key is in ``identities``, the
    /// lifetime in ``buffers``).
    let records: [ServiceRecord]
    /// Per slot: the key's name, made on first use.
    let keyNames: KeyNames
    /// The distinct `#fileID`s of the registrations (``ServiceRecord/fileIndex``).
    let files: [StaticString]
    /// The slots of the seeds, in slot order: the values every scope must be given.
    let seedSlots: [Int]
    /// Per kind of scope (an index into ``scopeKinds``), the slots of its seeds, in slot order; nil when
    /// the graph names no kind but the default (``seedSlots`` then serves).
    let seedSlotsByKind: [[Int]]?
    /// The slots of seeds a provider replaced, in order: a value a scope is given for one is ignored.
    let replacedSeedSlots: [Int]
    /// The kind of each edge, parallel to the dependency slots; nil when every edge is direct.
    let edgeKinds: [_DependencyKind]?
    /// Optional dependencies on keys the graph does not provide: (dependent slot, key), in slot order.
    let absentOptionals: [(slot: Int, key: any ServiceKey.Type)]
    /// The declared dependencies of the providers that have optional ones, by slot: what a child graph
    /// inherits (it may provide a key that is absent here).
    let declaredDependencies: [Int: _DependencyKeys]
    /// The kinds of scope the graph names, the default first (see ``ScopeKind``).
    let scopeKinds: [ScopeKind]
    /// The contributions placed in the graph's lists, for child graphs that contribute to them too.
    let placedContributions: [PlacedContribution]
    /// The modules the services came from (``GraphModule``), for errors, dumps and child graphs (which
    /// keep their privacy): per slot, an index into `modules` (0: none); nil when no service came from
    /// a module.
    let slotModules: [UInt16]?
    let modules: [ModuleInfo]
    /// Per slot, the index in ``scopeKinds`` of a scoped service's or seed's kind (0 otherwise); nil
    /// when the graph names no kind but the default.
    let slotScopeKinds: [UInt16]?
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
    /// The builder's ``ServiceGraph/Builder/reportsResolveEvents``, as set (a child builder starts with it).
    let reportsResolveEvents: Bool
    /// Whether a handler wants any event a scope sends (opened, closed, a service created in it): a
    /// plain flag tested before ``events`` on a scope's open, first resolve and close, which a server
    /// runs with cold caches (the sink's own test is a call).
    let reportsScopeEvents: Bool
    /// Where `resolveSynchronously` keeps the services the current thread is making.
    let threadTrail = _ThreadTrail.Slot.shared
    /// Whether the graph has shut down and whether resolves send events, in one word: read by every
    /// `resolve` (see ``_ResolveFlags/allowsFastPath`` and ``isShutDown()``).
    @usableFromInline
    let resolveFlags: _ResolveFlags
    /// The singletons in the order they were created (a topological order), released in reverse: the
    /// graph's one creation order (``creationOrder``). Written only by the build's coordinator, before
    /// the graph is published, so no two accesses can overlap: the run-time exclusivity check (one per
    /// singleton) is left out.
    @exclusivity(unchecked)
    private var creationSlots: [Int32] = []
    /// The plan's providers (the builder's registrations, shared, not copied), for the singletons'
    /// factories until the build is done (``releaseSingletonFactories()``): a built graph keeps only the
    /// factories it may run again, so it does not hold on to the registrations or to what the
    /// singletons' factories capture. Released only by a successful build's coordinator, once every
    /// task it started has ended (a build that abandons work fails), and read by those tasks.
    @exclusivity(unchecked)
    private var singletonProviders: RegistrationList?

    /// The key table: per slot, its key's identity (shared with error messages and key names); per
    /// bucket, a slot or -1, in a raw buffer (see ``KeyTable``).
    let identities: _KeyIdentities
    @usableFromInline
    let keyIdentities: UnsafeBufferPointer<UInt>
    @usableFromInline
    let keyBuckets: UnsafeMutableBufferPointer<Int32>
    @usableFromInline
    let keyShift: UInt
    /// The per-slot buffers the resolve path reads.
    @usableFromInline
    let buffers: _Buffers
    /// The singletons created on first use, not by the build; nil when the graph has none. Set once, in
    /// `init`.
    private(set) var deferredSingletons: DeferredSingletons?

    /// Makes the core of a valid plan (no missing edges, no cycles). Of the plan, only its providers are
    /// kept, until the build is done (``releaseSingletonFactories()``).
    init(
        plan: GraphPlan,
        hookTimeout: Duration?,
        factoryTimeout: Duration?,
        parentClaims: HookClaims?,
        events: EventSink,
        reportsResolveEvents: Bool
    ) {
        self.hookTimeout = hookTimeout
        self.factoryTimeout = factoryTimeout
        self.hookClaims = HookClaims(parent: parentClaims)
        self.events = events
        self.reportsResolveEvents = reportsResolveEvents
        let reportsResolves = reportsResolveEvents && events.isEnabled(.resolved)
        self.reportsResolves = reportsResolves
        self.reportsScopeEvents =
            events.isEnabled(.scopeOpened) || events.isEnabled(.scopeClosed) || events.isEnabled(.serviceCreated)
        self.resolveFlags = _ResolveFlags(reportsResolves: reportsResolves)
        let count = plan.count
        var files: [StaticString] = []
        var fileIndex = FileIndex()
        var records: [ServiceRecord] = []
        records.reserveCapacity(count)
        var seedSlots: [Int] = []
        // Registrations come in runs from one file: the last file's address is checked before hashing.
        var lastFile: (address: UInt, index: UInt32) = (0, 0)
        for slot in plan.providers.indices {
            let file = plan.providers[slot].site.fileID
            let address = file.hasPointerRepresentation ? UInt(bitPattern: file.utf8Start) : 0
            let index: UInt32
            if address != 0, address == lastFile.address {
                index = lastFile.index
            } else if address != 0, let known = fileIndex.index(of: address) {
                index = known
            } else {
                index = UInt32(files.count)
                files.append(file)
                fileIndex.note(address)
            }
            if address != 0 { lastFile = (address, index) }
            let isSeed = plan.providers[slot].isSeed
            if isSeed { seedSlots.append(slot) }
            records.append(
                ServiceRecord(
                    line: plan.providers[slot].site.line,
                    fileIndex: index,
                    isOverride: plan.overridden[slot],
                    isSeed: isSeed,
                    isPairedForm: plan.providers[slot].isPairedForm,
                    borrowsParentInstance: plan.providers[slot].borrowsParentInstance
                )
            )
        }
        self.records = records
        self.seedSlots = seedSlots
        self.replacedSeedSlots = plan.replacedSeedSlots
        self.scopeKinds = plan.scopeKinds
        let modules = plan.providers.modules
        self.modules = modules
        self.slotModules = modules.count > 1 ? plan.providers.indices.map { plan.providers[$0].module } : nil
        self.slotScopeKinds = plan.slotScopeKinds
        if let kinds = plan.slotScopeKinds {
            var byKind = Array(repeating: [Int](), count: plan.scopeKinds.count)
            for slot in seedSlots { byKind[Int(kinds[slot])].append(slot) }
            seedSlotsByKind = byKind
        } else {
            seedSlotsByKind = nil
        }
        self.edgeKinds = plan.edgeKinds
        self.absentOptionals = plan.absentOptionals
        var declaredDependencies: [Int: _DependencyKeys] = [:]
        if plan.edgeKinds != nil || !plan.absentOptionals.isEmpty {
            for slot in plan.providers.indices where plan.providers[slot].dependencies.hasWrappers {
                declaredDependencies[slot] = plan.providers[slot].dependencies
            }
        }
        self.declaredDependencies = declaredDependencies
        let identities = _KeyIdentities(plan.table.identities)
        self.identities = identities
        self.keyIdentities = UnsafeBufferPointer(identities.elements)
        // The labels are copied only when there are some: a copy of the dictionary asks the runtime for
        // its type, new to a fresh process (with a scan of every conformance, for its key's `Hashable`).
        let labels = plan.composition.labels.isEmpty ? [:] : plan.composition.labels
        self.keyNames = KeyNames(labels: labels) { identities.keys }
        self.placedContributions = plan.composition.placed
        self.files = files
        let traits = ResolutionTraits(plan)
        creationSlots.reserveCapacity(count)

        // Safety (all buffers): allocated and fully initialized here, freed in `deinit`.
        self.keyBuckets = .allocate(capacity: plan.table.buckets.count)
        _ = keyBuckets.initialize(from: plan.table.buckets)
        self.keyShift = plan.table.shift
        self.buffers = _Buffers(plan, resolutionFlags: traits.flags)
        self.singletonProviders = plan.providers
        if plan.deferred?.contains(true) == true { deferredSingletons = DeferredSingletons(core: self) }
    }

    deinit {
        releaseSingletons()
        releaseSingletonFactories()
        keyBuckets.deallocate()
        buffers.deallocate()
    }

    var count: Int { records.count }

    /// The singletons in the order they were created (kept as 32-bit slots: a graph holds one per
    /// singleton).
    var creationOrder: [Int] { creationSlots.map(Int.init) }

    /// The number of dependency edges.
    var edgeCount: Int { Int(buffers.dependencyStart[count]) }

    /// The slots `slot` depends on, in declaration order: how code outside the core reads the edges.
    func dependencies(of slot: Int) -> LazyMapCollection<Range<Int>, Int> {
        buffers.checkSlot(slot)
        let buffers = self.buffers
        return (Int(buffers.dependencyStart[slot])..<Int(buffers.dependencyStart[slot + 1])).lazy.map {
            Int(buffers.dependencySlots[$0])
        }
    }

    /// Every slot's lifetime, copied out of the buffers: for a dump that outlives the core.
    var lifetimes: [Lifetime] { Array(UnsafeBufferPointer(start: buffers.lifetimes, count: count)) }

    /// The dependency edges, copied out of the buffers (two copies of flat memory): for a dump that
    /// outlives the core.
    var edges: Edges {
        Edges(
            dependencyStart: Array(UnsafeBufferPointer(start: buffers.dependencyStart, count: count + 1)),
            dependencyTargets: Array(UnsafeBufferPointer(start: buffers.dependencySlots, count: edgeCount))
        )
    }

    /// The lifetime of the service at `slot`.
    @inlinable
    func lifetime(of slot: Int) -> Lifetime {
        buffers.checkSlot(slot)
        return buffers.lifetimes[slot]
    }

    /// Whether the service at `slot` can be resolved without suspending (see ``ResolutionTraits``).
    @inlinable
    func resolvesSynchronously(_ slot: Int) -> Bool {
        buffers.checkSlot(slot)
        return buffers.resolutionFlags[slot] & _Buffers.resolvesSynchronouslyFlag != 0
    }

    /// Whether resolving the service at `slot` needs a scope: scoped, or depending on a scoped service
    /// (see ``ResolutionTraits``).
    func needsScope(_ slot: Int) -> Bool {
        buffers.checkSlot(slot)
        return buffers.resolutionFlags[slot] & _Buffers.needsScopeFlag != 0
    }

    /// Whether the service at `slot` is a singleton created on first use, not by the build (see
    /// ``GraphPlan/deferred``).
    @usableFromInline
    func isDeferred(_ slot: Int) -> Bool {
        buffers.checkSlot(slot)
        return buffers.resolutionFlags[slot] & _Buffers.isDeferredFlag != 0
    }

    /// Whether the service at `slot` can be resolved from a scope without suspending: as
    /// ``resolvesSynchronously(_:)``, seeds included (see ``ResolutionTraits``).
    @inlinable
    func resolvesSynchronouslyInScope(_ slot: Int) -> Bool {
        buffers.checkSlot(slot)
        return buffers.resolutionFlags[slot] & _Buffers.resolvesSynchronouslyInScopeFlag != 0
    }

    /// Whether the scoped service at `slot` is made in place by its first resolve in a scope, with no
    /// check of its dependencies (see ``ResolutionTraits/makesInPlaceInScope``).
    func makesInPlaceInScope(_ slot: Int) -> Bool {
        buffers.checkSlot(slot)
        return buffers.resolutionFlags[slot] & _Buffers.makesInPlaceInScopeFlag != 0
    }

    /// Whether a handler wants the scope event `kind`: the plain flag first (see ``reportsScopeEvents``).
    @inline(__always)
    func reportsScopeEvent(_ kind: ServiceGraphEvent.Kind) -> Bool {
        reportsScopeEvents && events.isEnabled(kind)
    }

    func name(_ slot: Int) -> String { keyNames.name(slot) }

    /// The index in ``scopeKinds`` of the kind of the scoped service or seed at `slot` (0 otherwise).
    @inline(__always)
    func scopeKindIndex(of slot: Int) -> UInt16 {
        slotScopeKinds?[slot] ?? 0
    }

    /// The kind of scope of the scoped service or seed at `slot`; the default for any other.
    func scopeKind(of slot: Int) -> ScopeKind {
        scopeKinds[Int(scopeKindIndex(of: slot))]
    }

    /// Whether the service at `slot` is a seed, given to each scope when it is made.
    @usableFromInline
    func isSeed(_ slot: Int) -> Bool { records[slot].isSeed }

    /// The key of `slot` (a dynamic cast: for diagnostics, not for resolving).
    func key(at slot: Int) -> any ServiceKey.Type { identities.key(at: slot) }

    func site(_ slot: Int) -> RegistrationSite {
        let record = records[slot]
        return RegistrationSite(fileID: files[Int(record.fileIndex)].description, line: Int(record.line))
    }

    /// Whether the graph has shut down: a relaxed load, inlined in every `resolve` (a call would cost a
    /// created singleton's `resolve` more than the rest of it).
    @inlinable
    @inline(__always)
    func isShutDown() -> Bool {
        resolveFlags.isShutDown
    }

    /// Makes every later `resolve` throw ``ServiceGraphError/Code/graphShutDown``.
    func markShutDown() {
        resolveFlags.setShutDown()
    }

    /// The slot of `key`, or nil.
    ///
    /// - Complexity: O(1) on average.
    @inlinable
    @inline(__always)
    func slot<Key: ServiceKey>(of key: Key.Type) -> Int? {
        let bits = UInt(bitPattern: Key._keyID)
        let bucket = _KeyProbe.bucket(for: bits, in: keyBuckets, identities: keyIdentities, shift: keyShift)
        let slot = keyBuckets[bucket]
        return slot < 0 ? nil : Int(truncatingIfNeeded: slot)
    }

    /// The slot of the key whose ``ServiceKey/_keyID`` is `keyID`: ``slot(of:)`` for a key known only as
    /// an existential metatype, without opening it.
    func slot(ofKeyID keyID: ObjectIdentifier) -> Int? {
        let bits = UInt(bitPattern: keyID)
        let bucket = _KeyProbe.bucket(for: bits, in: keyBuckets, identities: keyIdentities, shift: keyShift)
        let slot = keyBuckets[bucket]
        return slot < 0 ? nil : Int(truncatingIfNeeded: slot)
    }
}

// MARK: - Factories

extension _GraphCore {
    /// The factory at `slot` (a copy): a transient or scoped service's, or a singleton's while the build
    /// runs. A singleton's factory asked for after the build released it (only work a build abandoned
    /// could ask) throws `CancellationError`, as an emptied singleton slot does.
    func factory(at slot: Int) throws -> _AnyFactory {
        buffers.checkSlot(slot)
        guard buffers.lifetimes[slot] == .singleton, !isDeferred(slot) else { return serviceFactory(at: slot) }
        guard let providers = singletonProviders else { throw CancellationError() }
        return providers[slot].factory
    }

    /// The factory of the transient or scoped service, or singleton created on first use, at `slot` (a
    /// copy), which a built graph always holds.
    func serviceFactory(at slot: Int) -> _AnyFactory {
        buffers.withFactory(at: slot) { copy $0 }
    }

    /// Frees the singletons' factories. Called by the build once every singleton exists: the graph never
    /// runs them again.
    func releaseSingletonFactories() {
        singletonProviders = nil
    }
}

// MARK: - Singletons

extension _GraphCore {
    /// The singleton at `slot` as a `Value`, or nil when the slot holds no singleton.
    ///
    /// - Complexity: O(1), no lock, no allocation; retains only the value.
    @inlinable
    func singleton<Value: Sendable>(at slot: Int, as type: Value.Type) -> Value? {
        buffers.singleton(at: slot, as: type)
    }

    /// The singleton for `key`, or a trap: the subscripts of the graph and of a scope.
    ///
    /// The two paths meet at the box, which the core holds, not at the value: a value returned by the
    /// slow path would be owned, and the fast path would then retain the value to match it, where a
    /// caller that only borrows it needs no retain at all.
    @inlinable
    @inline(__always)
    func singletonOrTrap<Key: ServiceKey>(_ key: Key.Type) -> Key.Value {
        let box: Unmanaged<_AnyBox>
        if let slot = slot(of: key), let created = buffers.singletonBox(at: slot) {
            box = created
        } else {
            box = createdDeferredBoxOrTrap(key)
        }
        return _Buffers.value(in: box, as: Key.Value.self)
    }

    /// Stores a created singleton. Only the build's coordinator calls this, once per slot, before any
    /// reader of that slot exists (its dependents start after the write, and the graph is returned after
    /// the build): the slots need no synchronization.
    ///
    /// Takes `box` over: the caller's reference becomes the core's, with no retain and release.
    func storeSingleton(_ box: consuming _AnyBox, at slot: Int) {
        buffers.checkSlot(slot)
        _internalInvariant(buffers.singletonBox(at: slot) == nil, "the singleton at slot \(slot) was stored twice")
        _internalInvariant(buffers.lifetimes[slot] == .singleton, "slot \(slot) is not a singleton")
        // Safety: the core keeps the reference it was given, given back in `releaseSingletons`.
        buffers.setSingletonBox(.passRetained(consume box), at: slot)
        creationSlots.append(Int32(truncatingIfNeeded: slot))
    }

    /// The created instance of the singleton at `slot`, made by the build or on first use; nil when it
    /// has not been made (yet).
    func createdSingletonBox(at slot: Int) -> Unmanaged<_AnyBox>? {
        buffers.singletonBox(at: slot) ?? deferredSingletons?.createdBox(at: slot)?.box
    }

    /// Drops every singleton but those `kept` marks, most recently created first: a failed build's
    /// rollback (which keeps those that work it abandoned may still read, and drops them once that
    /// work ends), and the core's `deinit`. The creation order stays, for the failed build's report.
    func releaseSingletons(keeping kept: [Bool]? = nil) {
        for slot in creationSlots.reversed().lazy.map(Int.init) where kept?[slot] != true {
            // Safety: gives back the retain `storeSingleton` took, once (the slot is 0 afterwards).
            buffers.singletonBox(at: slot)?.release()
            buffers.setSingletonBox(nil, at: slot)
        }
    }
}

// MARK: - Buffers

extension _GraphCore {
    /// The per-slot raw buffers of a core, as base pointers: shared by the core and every
    /// ``_UnsafeResolver`` it hands out, so that reading them costs no reference counting and no bounds
    /// bookkeeping on the resolve path (slots are checked in debug builds).
    ///
    /// Allocated by the core's `init`, freed by its `deinit` (``deallocate()``).
    @usableFromInline
    struct _Buffers {
        /// How many slots each per-slot buffer has.
        @usableFromInline
        let slotCount: Int
        /// Per slot, one word, retained by the core: a singleton's box, or 0 while it does not exist (a
        /// built graph never runs a singleton's factory again); a transient or scoped service's
        /// factory box with a tag bit set (``factoryTag``). One word
        /// where a box and a factory each took one: a graph of a million services keeps 8 MB less.
        ///
        /// A factory is in an object (``_FactoryBox``) so that the resolve path reads it through a
        /// guaranteed reference, without retaining what it captures.
        @usableFromInline
        let instances: UnsafeMutablePointer<UInt>
        /// Per slot: its lifetime.
        @usableFromInline
        let lifetimes: UnsafeMutablePointer<Lifetime>
        /// Per slot: whether it can be resolved without suspending, from the graph and from a scope (see
        /// ``ResolutionTraits``): one byte of flags.
        @usableFromInline
        let resolutionFlags: UnsafeMutablePointer<UInt8>
        // The bits of ``ResolutionTraits``, spelled here for the inlined resolve path.
        @inlinable
        static var resolvesSynchronouslyFlag: UInt8 { 1 }
        @inlinable
        static var resolvesSynchronouslyInScopeFlag: UInt8 { 2 }
        @inlinable
        static var needsScopeFlag: UInt8 { 4 }
        @inlinable
        static var isDeferredFlag: UInt8 { 8 }
        @inlinable
        static var makesInPlaceInScopeFlag: UInt8 { 16 }
        /// The dependencies of slot `s` are `dependencySlots[dependencyStart[s]..<dependencyStart[s + 1]]`.
        @usableFromInline
        let dependencyStart: UnsafeMutablePointer<Int32>
        @usableFromInline
        let dependencySlots: UnsafeMutablePointer<Int32>

        init(_ plan: GraphPlan, resolutionFlags flags: [UInt8]) {
            let count = plan.count
            slotCount = count
            // Safety: every buffer has room for at least one element and is fully initialized here.
            instances = .allocate(capacity: max(count, 1))
            for slot in 0..<count {
                // Safety: the core takes one retain of each factory box, given back in `deallocate`.
                // A singleton created on first use keeps its factory, as a transient does.
                guard plan.lifetimes[slot] != .singleton || plan.deferred?[slot] == true else {
                    (instances + slot).initialize(to: 0)
                    continue
                }
                let factory = Unmanaged.passRetained(_FactoryBox(plan.providers[slot].factory))
                (instances + slot).initialize(to: UInt(bitPattern: factory.toOpaque()) | Self.factoryTag)
            }
            lifetimes = .allocate(capacity: max(count, 1))
            lifetimes.initialize(from: plan.lifetimes, count: count)
            resolutionFlags = .allocate(capacity: max(count, 1))
            resolutionFlags.initialize(from: flags, count: count)
            dependencyStart = .allocate(capacity: count + 1)
            dependencySlots = .allocate(capacity: max(plan.edges.edgeCount, 1))
            var edge = 0
            for slot in 0..<count {
                (dependencyStart + slot).initialize(to: Int32(truncatingIfNeeded: edge))
                for target in plan.edges.dependencies(of: slot) {
                    (dependencySlots + edge).initialize(to: Int32(truncatingIfNeeded: target))
                    edge += 1
                }
            }
            (dependencyStart + count).initialize(to: Int32(truncatingIfNeeded: edge))
        }

        /// Frees the buffers, and the factories' boxes; the core has given back the instances' retains.
        func deallocate() {
            for slot in 0..<slotCount where instances[slot] & Self.factoryTag != 0 {
                Unmanaged<_FactoryBox>.fromOpaque(Self.pointer(instances[slot])).release()
            }
            instances.deallocate()
            lifetimes.deallocate()
            resolutionFlags.deallocate()
            dependencyStart.deallocate()
            dependencySlots.deallocate()
        }

        /// Checks, in debug builds, that `slot` is one of the graph's.
        @inlinable
        @inline(__always)
        func checkSlot(_ slot: Int) {
            _internalInvariant(slot >= 0 && slot < slotCount, "slot \(slot) out of range")
        }

        /// Calls `body` with the factory of the transient or scoped service at `slot`, in place.
        @inlinable
        func withFactory<Result>(at slot: Int, _ body: (borrowing _AnyFactory) throws -> Result) rethrows -> Result {
            checkSlot(slot)
            // Safety: the core holds these factories until it is deallocated; the caller holds the core.
            _internalInvariant(instances[slot] & Self.factoryTag != 0, "slot \(slot) holds no factory")
            return try Unmanaged<_FactoryBox>.fromOpaque(Self.pointer(instances[slot]))
                ._withUnsafeGuaranteedRef { try body($0.factory) }
        }

        /// The singleton at `slot` as a `Value`, or nil when the slot holds no singleton.
        ///
        /// - Complexity: O(1), no lock, no allocation; retains only the value.
        @inlinable
        func singleton<Value: Sendable>(at slot: Int, as type: Value.Type) -> Value? {
            guard let box = singletonBox(at: slot) else { return nil }
            return Self.value(in: box, as: Value.self)
        }

        /// The value in a singleton's `box`, as a `Value` (the type its key gives it).
        ///
        /// With ``singletonBox(at:)``, the read a factory's thunk does for a singleton dependency: a
        /// thunk compiled as unspecialized generic code (keys made at run time) then needs no metadata
        /// for `Optional<Value>`, which the runtime looks up in its cache at every call.
        @inlinable
        @inline(__always)
        static func value<Value: Sendable>(in box: Unmanaged<_AnyBox>, as type: Value.Type) -> Value {
            // Safety: the core holds the box until it is deallocated, and the caller holds the core.
            box._withUnsafeGuaranteedRef { _unsafeValue(of: $0, as: Value.self) }
        }

        /// The box of the singleton at `slot`, unretained, or nil when the slot holds no singleton.
        @inlinable
        @inline(__always)
        func singletonBox(at slot: Int) -> Unmanaged<_AnyBox>? {
            checkSlot(slot)
            let word = instances[slot]
            #if _pointerBitWidth(_64)
            // One test: a box's word is a positive integer; 0 (no singleton yet) and a tagged factory's
            // (top bit set) are not.
            guard Int(bitPattern: word) > 0 else { return nil }
            #else
            guard word & Self.factoryTag == 0, word != 0 else { return nil }
            #endif
            // Safety: a box's word is its address, untagged.
            return Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: word).unsafelyUnwrapped)
        }

        /// Stores a created singleton's box (retained) at `slot`, which holds none, or empties the slot.
        func setSingletonBox(_ box: Unmanaged<_AnyBox>?, at slot: Int) {
            checkSlot(slot)
            _internalInvariant(instances[slot] & Self.factoryTag == 0, "slot \(slot) is not a singleton")
            instances[slot] = box.map { UInt(bitPattern: $0.toOpaque()) } ?? 0
        }

        /// The bit of a slot's word that is set when the word is a factory box. On 64-bit platforms the
        /// top bit, which no object's address has (user-space addresses are far below 2^63, and Swift
        /// itself counts on the top bits of an object reference being clear), so that telling a box
        /// from the rest is one signed comparison; elsewhere the lowest bit (objects are aligned).
        #if _pointerBitWidth(_64)
        @usableFromInline
        static let factoryTag: UInt = 1 << 63
        #else
        @usableFromInline
        static let factoryTag: UInt = 1
        #endif

        @inlinable
        @inline(__always)
        static func pointer(_ word: UInt) -> UnsafeMutableRawPointer {
            // Safety: called only on a word holding an object's address (tagged or not).
            UnsafeMutableRawPointer(bitPattern: word & ~factoryTag).unsafelyUnwrapped
        }
    }
}

/// A transient or scoped service's factory, held by a built graph in an object of its own: the resolve
/// path reads a factory through a guaranteed reference to its box, which costs no retain of what the
/// factory captures (a factory read from raw memory would be retained and released at every call).
@usableFromInline
final class _FactoryBox: Sendable {
    @usableFromInline
    let factory: _AnyFactory

    init(_ factory: _AnyFactory) {
        self.factory = factory
    }
}

extension _GraphCore {
    /// The index of each distinct `#fileID` address among a graph's files, while the core is made: the
    /// few files of most graphs are searched in order, a dictionary serves past them. A dictionary from
    /// the first file would have the runtime instantiate its storage's type in a fresh process (and
    /// scan every conformance for its key's `Hashable`): a first build's cost, for one file.
    struct FileIndex {
        private static let searched = 8
        /// Each file's address, in the order of `files`: searched while there are few.
        private var addresses: [UInt] = []
        private var byAddress: [UInt: UInt32] = [:]

        /// The index of the file at `address` (not 0) among those noted.
        func index(of address: UInt) -> UInt32? {
            _internalInvariant(address != 0, "a file without an address is never looked up")
            guard addresses.count > Self.searched else {
                return addresses.firstIndex(of: address).map { UInt32(truncatingIfNeeded: $0) }
            }
            return byAddress[address]
        }

        /// Notes the file at `address` (0 for one without), the next in `files`.
        mutating func note(_ address: UInt) {
            addresses.append(address)
            guard addresses.count > Self.searched else { return }
            // The first time past the searched files, all of them; then the one just noted.
            let start = addresses.count == Self.searched + 1 ? 0 : addresses.count - 1
            for index in start..<addresses.count {
                byAddress[addresses[index]] = UInt32(truncatingIfNeeded: index)
            }
        }
    }
}
