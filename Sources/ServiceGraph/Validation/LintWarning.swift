/// A warning about a graph that does not stop it from building.
public struct LintWarning: Sendable, Equatable, CustomStringConvertible {
    /// What kind of warning this is. New codes may be added without breaking existing code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String

        private init(_ name: String) {
            self.name = name
        }

        public var description: String { name }

        /// A provider nothing depends on, not declared as an entry point.
        public static let unusedProvider = Code("unused provider")
        /// An optional dependency (`dependsOn: AnalyticsKey?.self`) on a key the graph does not provide:
        /// the factory gets nil. Deliberate where a module adapts to what the application provides;
        /// listed so that a forgotten provider is seen.
        public static let absentOptionalDependency = Code("absent optional dependency")
    }

    public let code: Code
    /// The key the warning is about.
    public let key: String
    /// Where its provider was registered.
    public let site: RegistrationSite
    /// The warning, written for a person.
    public let message: String
    init(code: Code, key: String, site: RegistrationSite, message: String) {
        self.code = code
        self.key = key
        self.site = site
        self.message = message
    }

    public var description: String { "warning: \(message) [provided at \(site)]" }
}
