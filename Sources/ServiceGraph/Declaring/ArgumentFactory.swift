/// The key of a factory with arguments: a function that makes `Product`'s value from values the caller
/// supplies (`Argument`s) and from the graph's services, validated like any provider.
///
/// A provider declares the arguments with `provide(_:arguments:dependsOn:factory:)`; the graph then
/// holds a function under this key, which callers resolve, or depend on from another provider:
///
/// ```swift
/// builder.provide(ProfileKey.self, arguments: UserID.self, dependsOn: RepositoryKey.self) { id, repository in
///     Profile(id: id, repository: repository)
/// }
/// builder.provide(ProfileScreensKey.self, dependsOn: ArgumentFactory<ProfileKey, UserID>.self) { makeProfile in
///     ProfileScreens(makeProfile: makeProfile)   // makeProfile: (UserID) async throws -> Profile
/// }
/// ```
///
/// The compiler checks the argument types where the factory is provided and where it is called; the
/// graph checks that the key a dependent names (product and argument types) is provided, as for any
/// key. `ProfileKey` itself is not in the graph: asking for it is an error that names this key.
public struct ArgumentFactory<Product: ServiceKey, each Argument: Sendable>: ServiceKey {
    /// The function: each call makes a new value from its arguments, on the caller's executor
    /// (`nonisolated(nonsending)`: a call from the main actor does not hop to another thread and back).
    public typealias Value = nonisolated(nonsending) @Sendable (repeat each Argument) async throws -> Product.Value

    private init() {}

    /// `ProfileKey(UserID)`: the product's name with the argument types.
    public static var serviceName: String { "\(Product.serviceName)(\(argumentNames.joined(separator: ", ")))" }

    /// The argument types' names, in order.
    static var argumentNames: [String] {
        var names: [String] = []
        for argument in repeat (each Argument).self {
            names.append(TypeName.display(argument))
        }
        return names
    }
}

/// What diagnostics ask of an ``ArgumentFactory`` key without knowing its type parameters.
protocol ArgumentFactoryKey {
    /// The key of what the factory makes.
    static var product: any ServiceKey.Type { get }
    static var argumentNames: [String] { get }
}

extension ArgumentFactory: ArgumentFactoryKey {
    static var product: any ServiceKey.Type { Product.self }
}

/// The argument factories among `keys`, by name, by the key of what they make: what a caller asking for
/// a product itself meant (cold path: a dynamic cast per key).
func argumentFactoriesByProduct(among keys: some Sequence<any ServiceKey.Type>) -> [ObjectIdentifier: [String]] {
    var index: [ObjectIdentifier: [String]] = [:]
    for key in keys {
        guard let factory = key as? any ArgumentFactoryKey.Type else { continue }
        let name = "ArgumentFactory<\(factory.product.serviceName), \(factory.argumentNames.joined(separator: ", "))>"
        index[ObjectIdentifier(factory.product), default: []].append(name)
    }
    return index
}
