/// A named, reusable part of a graph: the providers, contributions and decorators one team or feature
/// ships, added to a builder with ``ServiceGraph/Builder/include(_:)``.
///
/// ```swift
/// struct PaymentsModule: GraphModule {
///     var privateKeys: [any ServiceKey.Type] { [PaymentsClientKey.self] }
///
///     func register(in builder: inout ServiceGraph.Builder) {
///         builder.provide(PaymentsClientKey.self, dependsOn: ConfigKey.self) { PaymentsClient(config: $0) }
///         builder.provide(CheckoutKey.self, dependsOn: PaymentsClientKey.self) { Checkout(client: $0) }
///     }
/// }
///
/// builder.include(PaymentsModule())
/// ```
///
/// A module's private keys are for the module alone: validation reports a service outside the module
/// that depends on one, or a decorator outside it that wraps one, with both sites (a test's `override`
/// of one is allowed). A child graph keeps its parent's modules: its own services are outside them. Including a module twice (the same type and name) includes
/// it once, so modules can include the modules they build on. Two modules providing one key is a
/// duplicate that names both. Errors and dumps say which module each service comes from (a DOT
/// cluster, a Mermaid subgraph, a `module` field in JSON).
public protocol GraphModule: Sendable {
    /// The module's name in errors and dumps; the type's name by default.
    var name: String { get }
    /// The keys this module provides that nothing outside it may depend on; none by default.
    var privateKeys: [any ServiceKey.Type] { get }
    /// Adds the module's providers, contributions and decorators to `builder`.
    func register(in builder: inout ServiceGraph.Builder)
}

extension GraphModule {
    public var name: String { TypeName.display(Self.self) }
    public var privateKeys: [any ServiceKey.Type] { [] }
}

/// A module as the registrations keep it (``RegistrationList/modules``): what validation and dumps need.
struct ModuleInfo: Sendable {
    /// The module's type, and its name: a module is included once per type and name.
    let type: ObjectIdentifier?
    let name: String
    /// The identities of the keys nothing outside the module may depend on.
    let privateKeys: Set<ObjectIdentifier>

    /// The registrations made outside any module.
    static let none = ModuleInfo(type: nil, name: "", privateKeys: [])

    func isSame(as other: ModuleInfo) -> Bool { type == other.type && name == other.name }
}
