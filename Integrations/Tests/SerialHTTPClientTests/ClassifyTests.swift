import NIOHTTP1
import SerialHTTPClient
import SerialRuntime
import Testing

/// The ready-made policy: a status after which the server may have acted is retried only for
/// idempotent requests.
@Suite("HTTPClientTransport.classify")
struct ClassifyTests {
    private func disposition(_ method: HTTPMethod, _ status: HTTPResponseStatus) -> String {
        let request = HTTPRequest(method, url: "http://127.0.0.1:1/x")
        switch HTTPClientTransport.classify(request, .success(HTTPResponse(status: status))) {
        case .retry: return "retry"
        case .failure: return "failure"
        case .credentialExpired: return "credentialExpired"
        default: return "other"
        }
    }

    @Test(arguments: [HTTPResponseStatus.internalServerError, .badGateway, .gatewayTimeout])
    func aServerErrorIsRetriedOnlyForIdempotentRequests(status: HTTPResponseStatus) {
        #expect(self.disposition(.GET, status) == "retry")
        #expect(self.disposition(.PUT, status) == "retry")
        #expect(self.disposition(.POST, status) == "failure", "a POST answered \(status.code) may have been acted on")
    }

    @Test(arguments: [HTTPResponseStatus.requestTimeout, .tooManyRequests, .serviceUnavailable])
    func aStatusSayingTheServerDidNotActIsRetriedForEveryMethod(status: HTTPResponseStatus) {
        #expect(self.disposition(.POST, status) == "retry")
    }

    @Test func unauthorizedMeansTheCredentialExpired() {
        #expect(self.disposition(.POST, .unauthorized) == "credentialExpired")
    }
}
