"""The embeddings and speech-to-text endpoints hung or failing (HTTP 500): one deadline covers every attempt.

The chat client already honours one total deadline that includes its retries (tests/test_security_llm.py);
these tests hold the OpenAI-compatible embeddings client and the transcription client to the same promise.
The endpoint is a real HTTP server on 127.0.0.1 (tests/support/hostile_openai.py) that hangs or answers 500
echoing the key; the video is a real PyAV-encoded file with a speech-like audio track. Time bounds are generous
(the machine is shared), yet each is below what one timeout per attempt would cost.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from support.hostile_openai import HostileServer

from universalrag.errors import EmbeddingError, IngestError

pytest.importorskip("openai")

KEY = "sk-endpoint-test-0123456789abcdef"


def _assert_names_endpoint(error: BaseException, server: HostileServer) -> None:
    message = str(error)
    assert server.base_url.removesuffix("/v1") in message, message
    assert KEY not in message and "0123456789abcdef" not in message, message


def test_a_hung_embeddings_endpoint_costs_the_timeout_once_not_per_retry() -> None:
    from universalrag.embed.openai_encoder import OpenAIEmbedder

    with HostileServer("hang", hang_s=30) as server:
        embedder = OpenAIEmbedder("m", base_url=server.base_url, api_key=KEY, dimension=8, timeout=1.5, max_retries=3)
        start = time.monotonic()
        with pytest.raises(EmbeddingError, match="timed out after 1.5 s") as caught:
            embedder.embed(["a passage"])
        elapsed = time.monotonic() - start
        _assert_names_endpoint(caught.value, server)
    assert elapsed < 1.5 * 2, elapsed  # four attempts of 1.5 s each would be 6 s and more


def test_embeddings_retries_on_500_stay_inside_the_deadline() -> None:
    from universalrag.embed.openai_encoder import OpenAIEmbedder

    with HostileServer("echo500") as server:
        embedder = OpenAIEmbedder("m", base_url=server.base_url, api_key=KEY, dimension=8, timeout=2.0, max_retries=2)
        start = time.monotonic()
        with pytest.raises(EmbeddingError, match="HTTP 500") as caught:
            embedder.embed_query("a question")
        assert time.monotonic() - start < 2.0 + 1.0
        assert server.requests == 3  # the retries did happen, inside the deadline
        _assert_names_endpoint(caught.value, server)


@pytest.mark.asyncio
async def test_async_embeddings_have_the_same_deadline() -> None:
    from universalrag.embed.openai_encoder import OpenAIEmbedder

    with HostileServer("hang", hang_s=30) as server:
        embedder = OpenAIEmbedder("m", base_url=server.base_url, api_key=KEY, dimension=8, timeout=1.0, max_retries=3)
        start = time.monotonic()
        with pytest.raises(EmbeddingError, match="timed out after 1 s") as caught:
            await embedder.aembed(["a passage"])
        assert time.monotonic() - start < 1.0 * 2
        _assert_names_endpoint(caught.value, server)


@pytest.fixture(scope="module")
def talk(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    pytest.importorskip("av")
    from support.video import write_video

    folder = tmp_path_factory.mktemp("asr")
    return write_video(folder / "talk.mp4", [("rocket", 3.0)], audio="speech", speech=[(0.5, 2.5)])


def test_a_hung_transcription_endpoint_costs_the_timeout_once_not_per_retry(talk) -> None:  # type: ignore[no-untyped-def]
    from universalrag.ingest.video import OpenAIAudioASR

    with HostileServer("hang", hang_s=30) as server:
        asr = OpenAIAudioASR("whisper-1", base_url=server.base_url, api_key=KEY, timeout=1.5)
        start = time.monotonic()
        with pytest.raises(IngestError, match="timed out after 1.5 s") as caught:
            asr.transcribe(Path(talk.path))
        elapsed = time.monotonic() - start
        _assert_names_endpoint(caught.value, server)
        assert "talk.mp4" in str(caught.value)
    assert elapsed < 1.5 * 2 + 1.0, elapsed  # + decoding the audio; three attempts would be 4.5 s and more
    assert server.requests == 1  # the deadline left no time for another attempt


def test_transcription_retries_on_500_stay_inside_the_deadline(talk) -> None:  # type: ignore[no-untyped-def]
    from universalrag.ingest.video import OpenAIAudioASR

    with HostileServer("echo500") as server:
        asr = OpenAIAudioASR("whisper-1", base_url=server.base_url, api_key=KEY, timeout=2.0)
        start = time.monotonic()
        with pytest.raises(IngestError, match="HTTP 500") as caught:
            asr.transcribe(Path(talk.path))
        assert time.monotonic() - start < 2.0 + 1.5
        assert server.requests == 3  # two retries, inside the deadline
        _assert_names_endpoint(caught.value, server)
