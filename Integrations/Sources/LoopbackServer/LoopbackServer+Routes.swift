import HTTPTypes
import Hummingbird
import NIOCore

/// The request context of the loopback server: the basic one plus the connection, which the
/// "dropped connection" fault closes.
struct LoopbackContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.channel = source.channel
    }
}

/// Thrown by a handler whose connection it closed on purpose.
struct ConnectionDropped: Error {}

extension LoopbackServer {
    static func router(_ state: SharedServerState) -> Router<LoopbackContext> {
        let router = Router(context: LoopbackContext.self)

        router.post("/token") { request, _ -> Response in
            let traceparent = request.headers[HTTPField.Name("traceparent")!]
            let (delay, fails) = state.withLock { state in
                state.enter(unique: false)
                state.counts.refreshCalls += 1
                return (state.behaviour.refreshDelay, state.behaviour.refreshFails)
            }
            if delay > .zero { try? await Task.sleep(for: delay) }
            let held = ContinuousClock.now
            while state.withLock({ $0.behaviour.holdsRefresh }), held.duration(to: .now) < .seconds(30) {
                try? await Task.sleep(for: .milliseconds(1))
            }
            let (status, body) = state.withLock { state -> (HTTPResponse.Status, String) in
                defer { state.leave(unique: false) }
                let status: HTTPResponse.Status = fails ? .internalServerError : .ok
                let body = fails ? "refresh failed" : state.issueToken()
                state.counts.arrivals.append(
                    .init(route: "token", id: "", token: nil, status: status.code, tag: nil, traceparent: traceparent))
                return (status, body)
            }
            return text(status, body)
        }

        router.post("/expire") { _, _ -> Response in
            state.withLock { $0.tokenExpired = true }
            return text(.ok, "")
        }

        router.get("/items/:id") { request, context -> Response in
            let id = context.parameters.get("id") ?? ""
            let bearer = bearerToken(request)
            let tag = request.headers[HTTPField.Name("X-Tag")!]
            let unique = request.headers[HTTPField.Name("X-Unique")!] == "1"
            let traceparent = request.headers[HTTPField.Name("traceparent")!]
            let delay = request.uri.queryParameters.get("delay_ms", as: Int.self) ?? 0
            let accepted = state.withLock { state in
                state.enter(unique: unique)
                let accepted = state.accept(bearer)
                if !accepted { state.counts.rejected += 1 }
                state.counts.arrivals.append(
                    .init(
                        route: "items", id: id, token: bearer, status: accepted ? 200 : 401, tag: tag,
                        traceparent: traceparent))
                return accepted
            }
            if delay > 0 { try? await Task.sleep(for: .milliseconds(delay)) }
            state.withLock { $0.leave(unique: unique) }
            return accepted ? text(.ok, "\(id) \(bearer ?? "")") : text(.unauthorized, "token expired")
        }

        router.get("/fault/:id") { request, context -> Response in
            let id = context.parameters.get("id") ?? ""
            let fault = state.withLock { state in
                state.enter(unique: false)
                let fault = state.drawFault()
                let (name, status): (String, Int) = switch fault {
                case .none: ("ok", 200)
                case .serverError: ("500", 500)
                case .slow: ("slow", 200)
                case .drop: ("drop", 0)
                }
                state.counts.faults[name, default: 0] += 1
                state.counts.arrivals.append(
                    .init(route: "fault", id: id, token: bearerToken(request), status: status, tag: nil))
                return fault
            }
            defer { state.withLock { $0.leave(unique: false) } }
            switch fault {
            case .none: return text(.ok, id)
            case .serverError: return text(.internalServerError, "fault")
            case .slow(let delay):
                try await state.sleep(for: delay)  // ends early when the server stops
                return text(.ok, id)
            case .drop:
                try? await context.channel.close()
                throw ConnectionDropped()
            }
        }

        router.get("/loop/:step") { _, context -> Response in
            let step = context.parameters.get("step") ?? ""
            state.withLock { state in
                state.counts.received += 1
                state.counts.arrivals.append(.init(route: "loop", id: step, token: nil, status: 302, tag: nil))
            }
            var response = text(.found, "")
            response.headers[.location] = step == "a" ? "/loop/b" : "/loop/a"
            return response
        }

        router.post("/oauth/token") { request, _ -> Response in
            let refreshToken = request.headers[HTTPField.Name("X-Refresh-Token")!]
            let worker = request.headers[HTTPField.Name("X-Worker")!] ?? ""
            let (hang, delay) = state.withLock { state in
                state.counts.rotation.refreshCalls += 1
                state.counts.rotation.refreshCallers.append(worker)
                state.counts.rotation.refreshCalledAt.append(.now)
                let hang = state.counts.rotation.refreshCalls <= state.behaviour.hangingRefreshes
                return (hang, state.behaviour.rotationDelay)
            }
            if hang {
                try await state.sleep(for: .seconds(3600))  // ends when the server stops
            }
            if delay > .zero { try? await Task.sleep(for: delay) }
            guard let tokens = state.withLock({ $0.rotate(refreshToken) }) else {
                return text(.badRequest, "invalid_grant")
            }
            return text(.ok, "\(tokens.access) \(tokens.refresh)")
        }

        router.get("/api/:id") { request, context -> Response in
            let id = context.parameters.get("id") ?? ""
            let accepted = state.withLock { state in
                let accepted = state.acceptRotating(bearerToken(request))
                if accepted {
                    state.counts.rotation.answeredByID[id, default: 0] += 1
                } else {
                    state.counts.rotation.rejected += 1
                }
                return accepted
            }
            return accepted ? text(.ok, id) : text(.unauthorized, "token expired")
        }

        router.get("/bench") { request, _ -> Response in
            let bearer = bearerToken(request)
            let accepted = state.withLock { state in
                state.counts.received += 1
                if let pass = state.behaviour.benchPassToken, bearer == pass { return true }
                let accepted = state.accept(bearer)
                if !accepted { state.counts.rejected += 1 }
                return accepted
            }
            return accepted ? text(.ok, "ok") : text(.unauthorized, "token expired")
        }
        return router
    }
}

private func bearerToken(_ request: Request) -> String? {
    guard let value = request.headers[.authorization], value.hasPrefix("Bearer ") else { return nil }
    return String(value.dropFirst(7))
}

private func text(_ status: HTTPResponse.Status, _ body: String) -> Response {
    Response(
        status: status, headers: [.contentType: "text/plain; charset=utf-8"],
        body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
}
