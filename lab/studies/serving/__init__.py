"""Benchmarks side by side in one run: ``make bench`` writes results/bench.md and .json.

Parts, each a module that measures and renders itself (runnable alone with
``python -m lab bench --parts NAME``):

* ``serving`` (serving.py): the six-task transcripts replayed through our server, the same GGUF
  in-process (the floor) and llama-cpp-python's bundled OpenAI server.
* ``peer`` (peer.py): our llama backend against llama.cpp's llama-server on identical chat
  requests, per prompt and per generated token.
* ``ladder`` (ladder.py): what each packaged model costs to serve, ours against llama-server.
* ``draft`` (draft.py): speculative decoding from the prompt against plain decoding, per
  packaged model, on recorded agent turns: identical replies and ms per generated token.
* ``backends`` (engines.py): llama vs transformers on the same transcripts.
* ``prefix`` (prefix.py): prompt tokens evaluated per turn, prefix cache on vs off.
* ``analyst`` (analyst_turns.py): the SQL analyst's turns on the default model: the share of each
  prompt the prefix cache carries, and wall per question with parallel calls on and off.
* ``harness`` (overhead.py): the harness's own milliseconds per turn.
* ``throughput`` (throughput.py): the scripted provider's requests/s and p50/p99.
* ``scale`` (scale.py): the eval runner's throughput as task runs in flight grow, on the
  scripted provider and on a real model (our server, llama-server with slots).
"""
