"""A queue of runs and the workers that run them, on DBOS (``pip install 'tao[workers]'``).

    run_id = agent.submit("summarise the logs")       # or: tao submit "summarise the logs"
    Worker(concurrency=4).serve()                     # or: tao worker --concurrency 4

:mod:`tao.workers.queue` puts a run on a queue (any process: the CLI, the web page, an
agent); :mod:`tao.workers.worker` takes runs off it and continues each through tao's own
resume, so the run log's journal decides what is done again after a crash.
"""
