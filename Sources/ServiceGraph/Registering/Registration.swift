/// One `provide` call, as the builder keeps it: nothing runs until ``ServiceGraph/Builder/build()``.
struct Registration: Sendable {
    // The one-byte fields last, where they fill the factory's tail: a registration is moved whenever
    // the builder's list grows.
    private(set) var key: any ServiceKey.Type
    let dependencies: _DependencyKeys
    let site: SiteLiteral
    let factory: _AnyFactory
    private(set) var lifetime: Lifetime
    /// Whether this registration replaces an earlier provider of the same key (see `override`).
    let isOverride: Bool
    /// The yes-or-no facts (``isSeed``, ``isInherited`` and the others after the initializer), one bit
    /// each: seven in one byte leave room for ``serial`` within a stride of 168 bytes.
    private var flags: Flags = []
    /// For a key of a factory with arguments: which form (the key type's ``ServiceKey/_argumentFactoryForm``,
    /// noted where the type is known).
    var argumentFactoryForm: _ArgumentFactoryForm = .none

    /// Whether this is the synchronous form a synchronous closure registered beside the asynchronous one.
    var isPairedSynchronousForm: Bool { isPairedForm && argumentFactoryForm == .synchronous }
    /// For a scoped service or a seed: its kind of scope, an index into the registration list's
    /// ``RegistrationList/scopeKinds`` (0: ``ScopeKind/default``).
    var scopeKind: UInt16 = 0
    /// The module that registered it, an index into the registration list's
    /// ``RegistrationList/modules`` (0: none).
    var module: UInt16 = 0
    /// Which registration call this is, for a ``LiveGraph`` to tell a generation's providers from the
    /// next one's (see `ServiceGraph.Builder.assignSerials()`); -1 until assigned, and for what a plan
    /// makes itself (a list of contributions).
    var serial: Int32 = -1

    init(
        key: any ServiceKey.Type,
        lifetime: Lifetime,
        dependencies: _DependencyKeys,
        site: SiteLiteral,
        factory: _AnyFactory,
        isOverride: Bool
    ) {
        self.key = key
        self.dependencies = dependencies
        self.site = site
        self.factory = factory
        self.lifetime = lifetime
        self.isOverride = isOverride
    }

    /// This registration with another lifetime (an override taking the one it replaces).
    func with(lifetime: Lifetime) -> Registration {
        var registration = self
        registration.lifetime = lifetime
        return registration
    }

    /// This registration under another key (a decorated key's provider, which makes the value its first
    /// decorator wraps).
    func with(key: any ServiceKey.Type) -> Registration {
        var registration = self
        registration.key = key
        return registration
    }

    /// For an override without a lifetime of its own: take the replaced provider's.
    var inheritsLifetime: Bool {
        get { flags.contains(.inheritsLifetime) }
        set { flags.update(.inheritsLifetime, to: newValue) }
    }

    /// A provider a child graph took from its parent: a provider of the same key in the child
    /// replaces it (the child is searched first) instead of being a duplicate.
    var isInherited: Bool {
        get { flags.contains(.isInherited) }
        set { flags.update(.isInherited, to: newValue) }
    }

    /// A singleton whose instance is its parent graph's (``ServiceGraph/makeChildBuilder()``): the parent
    /// starts and stops it. Kept when a child re-places a parent's contribution under a key of its own
    /// list (``isInherited`` is then false).
    var borrowsParentInstance: Bool {
        get { flags.contains(.borrowsParentInstance) }
        set { flags.update(.borrowsParentInstance, to: newValue) }
    }

    /// A seed (see ``ServiceGraph/Builder/seed(_:fileID:line:)``): each scope is given its value when it
    /// is made; the factory only reports that it was not.
    var isSeed: Bool {
        get { flags.contains(.isSeed) }
        set { flags.update(.isSeed, to: newValue) }
    }

    /// The key is a wrapper (`AnalyticsKey?`), which validation refuses as a key (noted where the key's
    /// type is known, so validation reads a flag instead of asking every key).
    var isWrapperKey: Bool {
        get { flags.contains(.isWrapperKey) }
        set { flags.update(.isWrapperKey, to: newValue) }
    }

    /// A child graph's view of a parent's singleton that the parent creates on first use: the child
    /// creates its view on first use too, so that building a child creates nothing in its parent.
    var isCreatedOnFirstUse: Bool {
        get { flags.contains(.isCreatedOnFirstUse) }
        set { flags.update(.isCreatedOnFirstUse, to: newValue) }
    }

    /// One of the two forms a `provide` or `override` given a synchronous closure registers, from that
    /// one closure: the asynchronous form and the synchronous one, at the same site. Validation
    /// reports the pair's problems once, on the asynchronous form. Any other provider of the
    /// asynchronous form takes the synchronous form away (see ``GraphPlan``).
    var isPairedForm: Bool {
        get { flags.contains(.isPairedForm) }
        set { flags.update(.isPairedForm, to: newValue) }
    }

    var keyID: ObjectIdentifier { ObjectIdentifier(key) }
    var name: String { key.serviceName }

    private struct Flags: OptionSet, Sendable {
        let rawValue: UInt8
        static let inheritsLifetime = Flags(rawValue: 1 << 0)
        static let isInherited = Flags(rawValue: 1 << 1)
        static let borrowsParentInstance = Flags(rawValue: 1 << 2)
        static let isSeed = Flags(rawValue: 1 << 3)
        static let isWrapperKey = Flags(rawValue: 1 << 4)
        static let isCreatedOnFirstUse = Flags(rawValue: 1 << 5)
        static let isPairedForm = Flags(rawValue: 1 << 6)

        mutating func update(_ flag: Flags, to isSet: Bool) {
            if isSet { insert(flag) } else { remove(flag) }
        }
    }
}
