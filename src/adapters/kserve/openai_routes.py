"""OpenAI's completions, chat completions and model list, on the FastAPI app of ``jaxport serve``.

Mounted where KServe mounts its own (``/openai/v1/...``), beside the v2
endpoints; the request and response bodies are :mod:`.openai_schema`'s (see
there why not KServe's). Every refusal has OpenAI's error shape:
a bad request (a body that fails the schema too, which FastAPI would answer
with 422) is HTTP 400 naming the field; an unknown model 404; a full queue
429 with ``Retry-After``; a server not ready or draining 503; a body that is not
``application/json`` (a form, ``text/plain``: what a web page may post
without asking) 415. The body is parsed, the conversation rendered and the
prompt tokenized on a worker thread, never on the event loop: health and the
other requests answer meanwhile. A streamed
completion is one server-sent event per token, then ``data: [DONE]``. The
model's worker wakes the event loop when a request's token is ready
(through :mod:`.relay`; no thread waits for it); the loop looks at the client at least every
:data:`WAIT_S`, so that a client that went away is noticed between tokens
and its request cancelled (its slot freed before the next step).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import ValidationError

from jaxport.domain.serving.generative import GenerativeModel, Piece, Prepared
from jaxport.domain.errors import GenerationError, JaxportError, SchedulerBusyError
from jaxport.domain.generation.penalties import TokenLogprob
from jaxport.domain.generation.scheduling import RequestStream
from .generation_metrics import GenerationMetrics
from .metrics import ServingMetrics
from .relay import Relay
from .openai_errors import invalid_body
from .openai_schema import scheduling_fields
from .openai_schema import (
    AssistantMessage, ChatChoice, ChatCompletion, ChatCompletionRequest, ChatLogprobs, ChatTokenLogprob, Completion,
    CompletionChoice, CompletionLogprobs, CompletionRequest, ErrorBody, ErrorResponse, ModelCard, ModelList,
    TopLogprob, Usage
)

logger = logging.getLogger("jaxport.serve")

#: How long the event loop waits for a request's token before it looks at the client again.
WAIT_S = 0.25
PREFIX = "/openai/v1"

_Body = TypeVar("_Body", CompletionRequest, ChatCompletionRequest)


class _Refusal(Exception):
    """A request answered with OpenAI's error shape."""

    def __init__(self, status: int, body: ErrorBody, kind: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(body.message)
        self.status, self.body, self.kind, self.headers = status, body, kind, headers or {}

    def response(self) -> Response:
        return JSONResponse(ErrorResponse(error=self.body).model_dump(mode="json"), status_code=self.status,
                            headers=self.headers)


@dataclass
class _Run:
    """One admitted request, followed to its end."""

    model: GenerativeModel
    prepared: Prepared
    stream: RequestStream
    arrival: float
    index: int = 0
    id: str = field(default_factory=lambda: f"cmpl-{uuid.uuid4().hex}")
    created: int = field(default_factory=lambda: int(time.time()))
    tokens: list[int] = field(default_factory=list)
    first: float = 0.0
    done: bool = False
    #: Each token's logprobs (where asked for) and where its text begins in the choice's text.
    logprobs: list[TokenLogprob] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)
    chars: int = 0


def _usage(runs: Sequence[_Run]) -> Usage:
    """The usage of a request's choices: its prompt once, the tokens of every choice."""
    prompt = len(runs[0].prepared.request.prompt)
    completion = sum(len(run.tokens) for run in runs)
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)


@dataclass(frozen=True)
class OpenAIRoutes:
    """The routes of one server.

    Args:
        model: the served model once loaded and checked (None before: 503).
        metrics: jaxport's counters (refusals); gen: generation's.
        relay: what wakes the event loop for the model's worker.
    """

    model: Callable[[], GenerativeModel | None]
    metrics: ServingMetrics
    gen: GenerationMetrics
    relay: Relay

    def mount(self, app: FastAPI) -> None:
        """Adds ``/openai/v1/models``, ``/completions`` and ``/chat/completions`` to ``app``."""
        app.add_api_route(f"{PREFIX}/models", self.models, methods=["GET"])
        app.add_api_route(f"{PREFIX}/completions", self.completions, methods=["POST"])
        app.add_api_route(f"{PREFIX}/chat/completions", self.chat_completions, methods=["POST"])

    async def models(self) -> Response:
        """The served model, once it is ready."""
        model = self.model()
        cards = [] if model is None else [ModelCard(id=model.name, created=int(time.time()),
                                                    max_model_len=model.spec.max_length or 0,
                                                    **scheduling_fields(model.scheduling))]
        return JSONResponse(ModelList(data=cards).model_dump(mode="json"))

    async def completions(self, request: Request) -> Response:
        """``POST /openai/v1/completions``."""
        return await self._answer(request, CompletionRequest, _completion_prompt, _completion_chunk, _completion)

    async def chat_completions(self, request: Request) -> Response:
        """``POST /openai/v1/chat/completions``, through the bundled chat template."""
        return await self._answer(request, ChatCompletionRequest, _chat_prompt, _chat_chunk, _chat)

    async def _answer(self, request: Request, kind: type[_Body],
                      prompt: Callable[[GenerativeModel, _Body], tuple[str | list[int], int | None]],
                      chunk: Callable[[_Run, Piece], str],
                      whole: Callable[[Sequence[_Run], Sequence[str], Sequence[str]], str]) -> Response:
        """A request's body parsed as ``kind``, its prompt and most tokens (``prompt``) checked and admitted,
        answered streamed (``chunk`` writes each event) or whole (``whole`` writes the body)."""
        arrival = time.monotonic()
        try:
            _json_only(request.headers.get("content-type"))
            raw = await request.body()
            self.gen.preparing.inc()
            try:  # the parse, the template and the tokenizer take the time of the text: not on the loop
                body, model, prepared = await asyncio.to_thread(self._prepare, kind, raw, prompt)
            finally:
                self.gen.preparing.dec()
            runs = self._submit(model, model.choices(prepared, body.n), arrival)
        except GenerationError as exc:  # the request asks what the model cannot do, named in OpenAI's terms
            return self._refused(_bad(exc), request)
        except _Refusal as refusal:
            return self._refused(refusal, request)
        if body.stream:
            usage = body.stream_options is not None and body.stream_options.include_usage
            return _sse(self._events(runs, request, chunk, usage))
        return await self._whole(runs, request, whole)

    def _prepare(self, kind: type[_Body], raw: bytes,
                 prompt: Callable[[GenerativeModel, _Body], tuple[str | list[int], int | None]]
                 ) -> tuple[_Body, GenerativeModel, Prepared]:
        """The body parsed as ``kind``, its model, its request prepared (run on a worker thread)."""
        body = _parse(kind, raw)
        model = self._model(body.model)
        text, most = prompt(model, body)
        return body, model, model.prepare(text, most, temperature=body.temperature, top_p=body.top_p,
                                          seed=body.seed, stop=body.stop, presence_penalty=body.presence_penalty,
                                          frequency_penalty=body.frequency_penalty, logit_bias=body.logit_bias,
                                          logprobs=_logprobs(body))

    def _model(self, name: str) -> GenerativeModel:
        model = self.model()
        if model is None:
            raise _Refusal(503, ErrorBody(message="The model is not ready yet", type="server_error",
                                          code="not_ready"), "ModelNotReady")
        if name != model.name:
            raise _Refusal(404, ErrorBody(message=f"The model '{name}' does not exist; this server serves "
                                                  f"'{model.name}'", type="invalid_request_error",
                                          param="model", code="model_not_found"), "ModelNotFound")
        return model

    def _submit(self, model: GenerativeModel, choices: Sequence[Prepared], arrival: float) -> list[_Run]:
        """Admits each choice (rows of one batch where the scheduler runs requests together); where one is
        refused, those admitted before it are cancelled."""
        runs: list[_Run] = []
        try:
            for index, prepared in enumerate(choices):
                runs.append(_Run(model, prepared, self._admit(model, prepared), arrival, index))
        except BaseException:
            for run in runs:
                run.stream.cancel()
            raise
        return runs

    def _admit(self, model: GenerativeModel, prepared: Prepared) -> RequestStream:
        try:
            return model.submit(prepared)
        except SchedulerBusyError as exc:
            if exc.retry_after is None:
                raise _Refusal(503, ErrorBody(message=str(exc), type="server_error", code="draining"),
                               "Draining") from exc
            wait = str(max(1, math.ceil(exc.retry_after)))
            raise _Refusal(429, ErrorBody(message=str(exc), type="rate_limit_error", code="queue_full"),
                           "SchedulerBusyError", {"Retry-After": wait}) from exc

    def _refused(self, refusal: _Refusal, request: Request) -> Response:
        model = self.model()
        cause = refusal.__cause__
        self.metrics.refused(model.name if model is not None else "",
                             cause if isinstance(cause, Exception) else refusal, kind=refusal.kind)
        return refusal.response()

    def _pieces(self, run: _Run) -> Iterator[Piece | None]:
        """The pieces of ``run`` as they are ready (None: none is now), counted in the metrics."""
        for piece in run.model.pieces(run.prepared, run.stream, 0.0):
            if piece is not None and piece.token is not None:
                if not run.tokens:
                    run.first = time.monotonic()
                self.gen.token(run.model.name, len(run.tokens), run.first - run.arrival)
                run.tokens.append(piece.token)
                if piece.logprob is not None:
                    run.logprobs.append(piece.logprob)
                    run.offsets.append(run.chars)
                run.chars += len(piece.text)
            elif piece is not None:
                run.done = True
                self.gen.finished(run.model.name, len(run.tokens), time.monotonic() - run.first)
            yield piece

    async def _follow(self, runs: Sequence[_Run], request: Request) -> AsyncIterator[tuple[_Run, Piece]]:
        """The pieces of each choice's run as they come; the streams cancelled if the client goes away or
        the caller stops.

        The model's worker wakes the event loop after each event (:meth:`RequestStream.listen`, through
        the :class:`~.relay.Relay`), and the pieces ready are read without blocking: no thread waits for
        a request's tokens, whatever the streams."""
        ready = asyncio.Event()
        for run in runs:
            run.stream.listen(self.relay.waker(ready))
        pieces = [(run, self._pieces(run)) for run in runs]
        looked = time.monotonic()
        try:
            while not all(run.done for run in runs):
                ready.clear()  # before reading: an event put after this sets it again
                came = [(run, piece) for run, piece in ((run, next(each)) for run, each in pieces if not run.done)
                        if piece is not None]
                if time.monotonic() - looked > WAIT_S:  # between tokens too: a whole answer
                    looked = time.monotonic()
                    if await request.is_disconnected():
                        logger.info("a client went away: its request to %r is cancelled", runs[0].model.name)
                        return
                for run, piece in came:
                    yield run, piece
                if came:
                    continue
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(WAIT_S):
                        await ready.wait()
        finally:
            for run in runs:
                if not run.done:
                    run.stream.cancel()

    async def _events(self, runs: Sequence[_Run], request: Request, chunk: Callable[[_Run, Piece], str],
                      usage: bool) -> AsyncIterator[str]:
        run = runs[0]
        try:
            async for run, piece in self._follow(runs, request):
                if piece.finish == "cancelled":
                    yield f"data: {_stopping().model_dump_json()}\n\n"
                    return
                yield f"data: {chunk(run, piece)}\n\n"
        except JaxportError as exc:  # the model failed on this request: said in the stream, as OpenAI does
            yield f"data: {_failed(run, exc).model_dump_json()}\n\n"
            return
        if usage:
            yield f"data: {_usage_chunk(runs, chunk)}\n\n"
        yield "data: [DONE]\n\n"

    async def _whole(self, runs: Sequence[_Run], request: Request,
                     answer: Callable[[Sequence[_Run], Sequence[str], Sequence[str]], str]) -> Response:
        texts: list[list[str]] = [[] for _ in runs]
        finishes: list[str | None] = [None] * len(runs)
        try:
            async for run, piece in self._follow(runs, request):
                texts[run.index].append(piece.text)
                finishes[run.index] = piece.finish
        except JaxportError as exc:
            return JSONResponse(_failed(runs[0], exc).model_dump(mode="json"), status_code=500)
        ended = [finish for finish in finishes if finish is not None]
        if len(ended) < len(runs):  # the client went away
            return Response(status_code=499)
        if "cancelled" in ended:
            return JSONResponse(_stopping().model_dump(mode="json"), status_code=503)
        return Response(answer(runs, ["".join(text) for text in texts], ended), media_type="application/json")


def _completion_prompt(model: GenerativeModel, body: CompletionRequest) -> tuple[str | list[int], int | None]:
    return body.prompt, body.max_tokens


def _chat_prompt(model: GenerativeModel, body: ChatCompletionRequest) -> tuple[str | list[int], int | None]:
    most = body.max_completion_tokens if body.max_completion_tokens is not None else body.max_tokens
    return model.render_chat([m.model_dump() for m in body.messages]), most


def _json_only(content_type: str | None) -> None:
    """Refuses (415) a body that is not JSON: a page of another site may post a form or ``text/plain``
    to this server without asking (a "simple" cross-origin request); JSON needs the browser to ask first."""
    media, *parameters = (content_type or "").split(";")
    charset = [p.split("=", 1)[1].strip().strip('"').lower() for p in parameters
               if p.split("=", 1)[0].strip().lower() == "charset" and "=" in p]
    if media.strip().lower() == "application/json" and all(c in ("utf-8", "utf8") for c in charset):
        return
    said = f"'{content_type}'" if content_type else "none"
    raise _Refusal(415, ErrorBody(message=f"The request body must be JSON (Content-Type: application/json, in "
                                          f"UTF-8); its Content-Type is {said}", type="invalid_request_error",
                                  code="unsupported_media_type"), "UnsupportedMediaType")


def _parse(kind: type[_Body], body: bytes) -> _Body:
    try:
        return kind.model_validate_json(body)
    except ValidationError as exc:
        message, param = invalid_body(exc, list(kind.model_fields))
        raise _Refusal(400, ErrorBody(message=message, type="invalid_request_error", param=param, code=400),
                       "MalformedRequest") from exc


def _bad(exc: GenerationError) -> _Refusal:
    refusal = _Refusal(400, ErrorBody(message=f"Invalid '{exc.argument}': {exc.detail}", type="invalid_request_error",
                                      param=exc.argument, code=400), type(exc).__name__)
    refusal.__cause__ = exc  # what the metrics count
    return refusal


def _stopping() -> ErrorResponse:
    return ErrorResponse(error=ErrorBody(message="The server is shutting down: the request was cancelled",
                                         type="server_error", code="draining"))


def _failed(run: _Run, exc: JaxportError) -> ErrorResponse:
    logger.error("a request to %r failed", run.model.name, exc_info=exc)
    said = exc.detail if isinstance(exc, GenerationError) else f"{type(exc).__name__}: {exc}"  # no internal prefix
    return ErrorResponse(error=ErrorBody(message=said, type="server_error", code=500))


def _sse(events: AsyncIterator[str]) -> StreamingResponse:
    return StreamingResponse(events, media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


def _logprobs(body: CompletionRequest | ChatCompletionRequest) -> int | None:
    """The alternatives listed with each token (None: no logprobs), from either request's fields.

    Raises:
        GenerationError: ``top_logprobs`` without ``logprobs``, as OpenAI refuses it.
    """
    if isinstance(body, CompletionRequest):
        return body.logprobs
    if body.top_logprobs is not None and not body.logprobs:
        raise GenerationError("top_logprobs", "top_logprobs needs logprobs set to true")
    return (body.top_logprobs or 0) if body.logprobs else None


def _token_text(model: GenerativeModel, token: int) -> str:
    """A token's text; ``token_id:N`` without a tokenizer (as vLLM writes token ids)."""
    return f"token_id:{token}" if model.codec is None else model.codec.decode([token])


def _completion_logprobs(run: _Run, logprobs: Sequence[TokenLogprob], offsets: Sequence[int]
                         ) -> CompletionLogprobs | None:
    if run.prepared.request.options.logprobs is None:
        return None
    model = run.model
    return CompletionLogprobs(
        text_offset=list(offsets), token_logprobs=[p.logprob for p in logprobs],
        tokens=[_token_text(model, p.token) for p in logprobs],
        top_logprobs=[_by_text(model, p.top) for p in logprobs])


def _by_text(model: GenerativeModel, top: Sequence[tuple[int, float]]) -> dict[str, float]:
    """The alternatives keyed by their text, as OpenAI's completions write them; where two tokens have one
    text, the more likely one's logprob."""
    out: dict[str, float] = {}
    for token, logprob in top:
        out.setdefault(_token_text(model, token), logprob)
    return out


def _chat_logprobs(run: _Run, logprobs: Sequence[TokenLogprob]) -> ChatLogprobs | None:
    if run.prepared.request.options.logprobs is None:
        return None
    model = run.model

    def top(token: int, logprob: float) -> TopLogprob:
        text = _token_text(model, token)
        return TopLogprob(token=text, bytes=list(text.encode("utf-8", "surrogatepass")), logprob=logprob)

    return ChatLogprobs(content=[ChatTokenLogprob(**top(p.token, p.logprob).model_dump(),
                                                  top_logprobs=[top(t, lp) for t, lp in p.top]) for p in logprobs])


def _piece_logprobs(run: _Run, piece: Piece) -> tuple[list[TokenLogprob], list[int]]:
    """A chunk's token's logprobs and text offset (none for a chunk without a token)."""
    if piece.logprob is None or not run.offsets:
        return [], []
    return [piece.logprob], [run.offsets[-1]]


def _usage_chunk(runs: Sequence[_Run], chunk: Callable[[_Run, Piece], str]) -> str:
    """The last chunk before ``[DONE]``: no choice, the usage of every choice."""
    run = runs[0]
    usage = _usage(runs)
    if chunk is _completion_chunk:
        return Completion(id=run.id, created=run.created, model=run.model.name, choices=[],
                          usage=usage).model_dump_json()
    return ChatCompletion(id=run.id, object="chat.completion.chunk", created=run.created, model=run.model.name,
                          choices=[], usage=usage).model_dump_json()


def _completion_chunk(run: _Run, piece: Piece) -> str:
    logprobs, offsets = _piece_logprobs(run, piece)
    choice = CompletionChoice(index=run.index, text=piece.text,
                              token_ids=[] if piece.token is None else [piece.token],
                              logprobs=_completion_logprobs(run, logprobs, offsets), finish_reason=piece.finish)
    return Completion(id=run.id, created=run.created, model=run.model.name, choices=[choice]).model_dump_json()


def _completion(runs: Sequence[_Run], texts: Sequence[str], finishes: Sequence[str]) -> str:
    choices = [CompletionChoice(index=run.index, text=text, token_ids=run.tokens,
                                logprobs=_completion_logprobs(run, run.logprobs, run.offsets), finish_reason=finish)
               for run, text, finish in zip(runs, texts, finishes)]
    run = runs[0]
    return Completion(id=run.id, created=run.created, model=run.model.name, choices=choices,
                      usage=_usage(runs)).model_dump_json()


def _chat_chunk(run: _Run, piece: Piece) -> str:
    logprobs, _ = _piece_logprobs(run, piece)
    choice = ChatChoice(index=run.index, delta=AssistantMessage(content=piece.text),
                        token_ids=[] if piece.token is None else [piece.token],
                        logprobs=_chat_logprobs(run, logprobs), finish_reason=piece.finish)
    return ChatCompletion(id=run.id, object="chat.completion.chunk", created=run.created, model=run.model.name,
                          choices=[choice]).model_dump_json()


def _chat(runs: Sequence[_Run], texts: Sequence[str], finishes: Sequence[str]) -> str:
    choices = [ChatChoice(index=run.index, message=AssistantMessage(content=text), token_ids=run.tokens,
                          logprobs=_chat_logprobs(run, run.logprobs), finish_reason=finish)
               for run, text, finish in zip(runs, texts, finishes)]
    run = runs[0]
    return ChatCompletion(id=run.id, object="chat.completion", created=run.created, model=run.model.name,
                          choices=choices, usage=_usage(runs)).model_dump_json()
