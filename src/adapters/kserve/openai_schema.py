"""The bodies of OpenAI's completions and chat completions that jaxport serves, as pydantic models.

Written here rather than taken from KServe: KServe 0.21's OpenAI stack
(``kserve.protocol.rest.openai``) imports vLLM for its request and response
types, and vLLM would pull a CUDA build of PyTorch of several GB into a
server that runs JAX, ONNX Runtime, LiteRT or IREE. The ``openai`` package's
own types describe responses only (it is a client), so the requests could
not come from it either. Only the fields jaxport honours are accepted: any
other field is refused by name rather than ignored.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from jaxport.domain.generation.scheduling import Scheduling

#: The most choices (``n``) of one request: each is a row of the batch.
MAX_CHOICES = 16

#: A ``stop``: a text, texts, or token ids (jaxport's extension).
Stop = str | list[str] | list[int] | None


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class StreamOptions(_Request):
    """``stream_options``: whether the last chunk before ``[DONE]`` carries the usage."""

    include_usage: bool = False


class _Sampling(_Request):
    """The fields both requests share."""

    model: str
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float = Field(default=1.0, ge=0.0, le=2.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    seed: int | None = None
    stop: Stop = None
    n: int = Field(default=1, ge=1, le=MAX_CHOICES)
    presence_penalty: float = Field(default=0.0, ge=-2.0, le=2.0)
    frequency_penalty: float = Field(default=0.0, ge=-2.0, le=2.0)
    logit_bias: dict[str, float] | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    user: str | None = None


class CompletionRequest(_Sampling):
    """``POST /openai/v1/completions``: one prompt, text or token ids."""

    prompt: str | list[int]
    logprobs: int | None = Field(default=None, ge=0, le=5)


class ChatMessage(_Request):
    """One message of a conversation."""

    role: str
    content: str


class ChatCompletionRequest(_Sampling):
    """``POST /openai/v1/chat/completions``."""

    messages: list[ChatMessage] = Field(min_length=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    logprobs: bool = False
    top_logprobs: int | None = Field(default=None, ge=0, le=20)


class Usage(BaseModel):
    """The tokens of a request."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class CompletionLogprobs(BaseModel):
    """A completion choice's ``logprobs``: per token, its text, logprob, the most likely alternatives (by
    text) and where its text begins in the choice's text."""

    text_offset: list[int]
    token_logprobs: list[float]
    tokens: list[str]
    top_logprobs: list[dict[str, float]]


class CompletionChoice(BaseModel):
    """One choice of a completion (or of a chunk of one); ``token_ids`` is jaxport's extension."""

    index: int = 0
    text: str
    token_ids: list[int]
    logprobs: CompletionLogprobs | None = None
    finish_reason: str | None


class Completion(BaseModel):
    """A completion, or one chunk of a streamed one (``object``: ``text_completion`` both)."""

    id: str
    object: Literal["text_completion"] = "text_completion"
    created: int
    model: str
    choices: list[CompletionChoice]
    usage: Usage | None = None


class AssistantMessage(BaseModel):
    """The reply of a chat completion, or a chunk's ``delta``."""

    role: Literal["assistant"] | None = "assistant"
    content: str | None = None


class TopLogprob(BaseModel):
    """One of the most likely tokens at a step: its text, the text's UTF-8 bytes, its logprob."""

    token: str
    bytes: list[int] | None
    logprob: float


class ChatTokenLogprob(TopLogprob):
    """A token of a chat choice with its logprob and the most likely alternatives at its step."""

    top_logprobs: list[TopLogprob]


class ChatLogprobs(BaseModel):
    """A chat choice's ``logprobs``."""

    content: list[ChatTokenLogprob] | None
    refusal: None = None


class ChatChoice(BaseModel):
    """One choice of a chat completion (``message``) or of a chunk (``delta``)."""

    index: int = 0
    message: AssistantMessage | None = None
    delta: AssistantMessage | None = None
    token_ids: list[int]
    logprobs: ChatLogprobs | None = None
    finish_reason: str | None


class ChatCompletion(BaseModel):
    """A chat completion (``chat.completion``) or one chunk of a streamed one (``chat.completion.chunk``)."""

    id: str
    object: Literal["chat.completion", "chat.completion.chunk"]
    created: int
    model: str
    choices: list[ChatChoice]
    usage: Usage | None = None


class ModelCard(BaseModel):
    """One entry of ``GET /openai/v1/models``."""

    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "jaxport"
    max_model_len: int
    #: jaxport's extension: how the server runs this model's requests (``continuous``: joining a decode batch
    #: of ``max_slots`` between steps; ``one_at_a_time``), and why (what continuous batching would need).
    scheduling: Literal["continuous", "one_at_a_time"] | None = None
    max_slots: int | None = None
    scheduling_reason: str | None = None


def scheduling_fields(scheduling: Scheduling | None) -> dict[str, Any]:
    """The :class:`ModelCard` fields that say ``scheduling`` (none where it is not known)."""
    if scheduling is None:
        return {}
    return {"scheduling": "continuous" if scheduling.continuous else "one_at_a_time",
            "max_slots": scheduling.slots, "scheduling_reason": scheduling.reason}


class ModelList(BaseModel):
    """``GET /openai/v1/models``."""

    object: Literal["list"] = "list"
    data: list[ModelCard]


class ErrorBody(BaseModel):
    """OpenAI's error: ``{"error": {"message", "type", "param", "code"}}``."""

    message: str
    type: str
    param: str | None = None
    code: int | str | None = None


class ErrorResponse(BaseModel):
    """The body of every refused request."""

    error: ErrorBody
