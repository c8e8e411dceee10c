"""The distributed engine: BFS and SSSP over a graph split among several owners.

One long call per owner, all started together on the owners' workers
(:mod:`gpipe.engine.owners.run`); each runs its level loop (:mod:`gpipe.engine.owners.bfs`,
:mod:`gpipe.engine.owners.sssp`) and talks to its peers only through a transport
(:mod:`gpipe.engine.owners.transport`): NCCL between GPU owners (:mod:`gpipe.engine.owners.nccl`), Dask's
worker-to-worker comms otherwise (:mod:`gpipe.engine.owners.dask_comms` over
:mod:`gpipe.engine.owners.peers`, which also carries aborts and watches for lost peers). What
travels at each step is named in :mod:`gpipe.engine.owners.messages`;
:mod:`gpipe.engine.owners.connect` opens an owner's transport, and
:mod:`gpipe.engine.owners.owner_result` ends its loop with its result frame. DESIGN.md beside this file
says why it is built this way.
"""
