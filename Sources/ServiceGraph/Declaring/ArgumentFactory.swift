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
///
/// A factory provided with a synchronous closure can also be called without `await`, from code that
/// cannot suspend (a view's body, a tap handler): depend on its ``Synchronous`` form.
public struct ArgumentFactory<Product: ServiceKey, each Argument: Sendable>: ServiceKey {
    /// The function: each call makes a new value from its arguments, on the caller's executor
    /// (`nonisolated(nonsending)`: a call from the main actor does not hop to another thread and back).
    public typealias Value = nonisolated(nonsending) @Sendable (repeat each Argument) async throws -> Product.Value

    private init() {}

    /// `ProfileKey(UserID)`: the product's name with the argument types.
    public static var serviceName: String { "\(Product.serviceName)(\(argumentNames.joined(separator: ", ")))" }

    /// The key of the same factory called without `await`, `(repeat each Argument) throws -> Product.Value`:
    /// in the graph when the factory was provided (or overridden) with a synchronous closure.
    ///
    /// ```swift
    /// builder.provide(ProfileKey.self, arguments: UserID.self, dependsOn: RepositoryKey.self) { id, repository in
    ///     Profile(id: id, repository: repository)     // no await: the factory has both forms
    /// }
    /// builder.provide(ProfileScreensKey.self, dependsOn: ArgumentFactory<ProfileKey, UserID>.Synchronous.self) {
    ///     ProfileScreens(makeProfile: $0)              // makeProfile: (UserID) throws -> Profile
    /// }
    /// ```
    ///
    /// Both forms are made from the same closure and the same dependencies, and validated as one
    /// factory. Any other provider of the asynchronous form (an override whose closure awaits, or an
    /// override of the function itself) takes the synchronous form away: what depends on it is then a
    /// missing provider, named at validation. Calling it costs what calling the closure by hand does,
    /// with no asynchronous call.
    public struct Synchronous: ServiceKey {
        /// The function: each call makes a new value from its arguments, on the caller's thread.
        public typealias Value = @Sendable (repeat each Argument) throws -> Product.Value

        private init() {}

        /// `synchronous ProfileKey(UserID)`.
        public static var serviceName: String { "synchronous \(ArgumentFactory.serviceName)" }
    }

    /// The argument types' names, in order.
    static var argumentNames: [String] {
        var names: [String] = []
        for argument in repeat (each Argument).self {
            names.append(TypeName.display(argument))
        }
        return names
    }
}

/// Which form of a factory with arguments a registration provides, noted by the builder's own
/// `provide(_:arguments:dependsOn:factory:)` (a key type is asked only where this is not known: an
/// override, or a child graph's own provider; a requirement on every key would cost each key type a
/// witness in the binary).
@usableFromInline
enum _ArgumentFactoryForm: UInt8, Sendable {
    /// Not a factory with arguments, or not known to be one.
    case none
    /// ``ArgumentFactory``, the asynchronous function every factory with arguments has.
    case asynchronous
    /// ``ArgumentFactory/Synchronous``, the form a synchronous closure also gives it.
    case synchronous
}

extension _ArgumentFactoryForm {
    /// The form `key` is, asked of its type (a dynamic cast: for the few registrations whose form the
    /// builder did not note).
    init(of key: any ServiceKey.Type) {
        guard let form = key as? any ArgumentFactoryKey.Type else {
            self = .none
            return
        }
        self = form.isSynchronousForm ? .synchronous : .asynchronous
    }
}

/// What diagnostics ask of an ``ArgumentFactory`` key, or of its ``ArgumentFactory/Synchronous`` form,
/// without knowing its type parameters.
protocol ArgumentFactoryKey {
    /// The key of what the factory makes.
    static var product: any ServiceKey.Type { get }
    static var argumentNames: [String] { get }
    /// Whether this is the synchronous form.
    static var isSynchronousForm: Bool { get }
    /// The key of the other form: the synchronous form of an asynchronous key, and back.
    static var otherForm: any ServiceKey.Type { get }
}

extension ArgumentFactoryKey {
    /// The key as a type spells it: `ArgumentFactory<ProfileKey, UserID>` (`.Synchronous`).
    static var spelledName: String {
        let generic = "ArgumentFactory<\(product.serviceName), \(argumentNames.joined(separator: ", "))>"
        return isSynchronousForm ? generic + ".Synchronous" : generic
    }
}

extension ArgumentFactory: ArgumentFactoryKey {
    static var product: any ServiceKey.Type { Product.self }
    static var isSynchronousForm: Bool { false }
    static var otherForm: any ServiceKey.Type { Synchronous.self }
}

extension ArgumentFactory.Synchronous: ArgumentFactoryKey {
    static var product: any ServiceKey.Type { Product.self }
    static var argumentNames: [String] { ArgumentFactory.argumentNames }
    static var isSynchronousForm: Bool { true }
    static var otherForm: any ServiceKey.Type { ArgumentFactory.self }
}

/// The argument factories among `keys`, by name, by the key of what they make: what a caller asking for
/// a product itself meant (cold path: a dynamic cast per key).
func argumentFactoriesByProduct(among keys: some Sequence<any ServiceKey.Type>) -> [ObjectIdentifier: [String]] {
    var index: [ObjectIdentifier: [String]] = [:]
    for key in keys {
        guard let factory = key as? any ArgumentFactoryKey.Type else { continue }
        index[ObjectIdentifier(factory.product), default: []].append(factory.spelledName)
    }
    return index
}
