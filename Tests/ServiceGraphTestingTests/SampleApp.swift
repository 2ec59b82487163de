import Foundation
import ServiceGraph

// A small application wired the way the tests use it: a mailer, a store, and a signup service.

protocol Mailer: Sendable {
    func send(to address: String, subject: String)
}

/// A mutable service: each test must see only its own instance's state.
final class AccountStore: @unchecked Sendable {
    private let lock = NSLock()
    private var accounts: [String] = []

    func add(_ account: String) {
        lock.withLock { accounts.append(account) }
    }

    var all: [String] { lock.withLock { accounts } }
}

struct SMTPMailer: Mailer {
    func send(to address: String, subject: String) {}
}

/// The double a test installs: it records what was sent.
final class RecordingMailer: Mailer, @unchecked Sendable {
    private let lock = NSLock()
    private var messages: [(String, String)] = []

    func send(to address: String, subject: String) {
        lock.withLock { messages.append((address, subject)) }
    }

    var sent: [String] { lock.withLock { messages.map { "\($0.0): \($0.1)" } } }
}

struct Signup: Sendable {
    let store: AccountStore
    let mailer: any Mailer

    func register(_ address: String) {
        store.add(address)
        mailer.send(to: address, subject: "Welcome")
    }
}

enum MailerKey: ServiceKey { typealias Value = any Mailer }
enum AccountStoreKey: ServiceKey { typealias Value = AccountStore }
enum SignupKey: ServiceKey { typealias Value = Signup }

enum SampleApp {
    /// The production wiring.
    static func builder() -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.provide(MailerKey.self) { SMTPMailer() }
        builder.provide(AccountStoreKey.self) { AccountStore() }
        builder.provide(SignupKey.self, lifetime: .transient, dependsOn: AccountStoreKey.self, MailerKey.self) {
            Signup(store: $0, mailer: $1)
        }
        builder.declareEntryPoints(SignupKey.self)
        return builder
    }
}
