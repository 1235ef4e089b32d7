"""Isolated children: the one mechanism by which jaxport parses untrusted bytes in another process.

A child is ``python -m MODULE ADDRESS_SPACE CPU_SECONDS`` under resource
limits, spoken to in JSON lines (:mod:`.messages`); the parent's side is
:mod:`.parent` (start, send, receive under a deadline, a death reported as
:class:`~.parent.ChildDied`), the child's :mod:`.child` (its limits, its
loop). Its users: the module worker (:mod:`jaxport.adapters.mlir.worker`),
the converted directory's verifier
(:mod:`jaxport.application.conversion.verify_directory`) and the chat
templates' renderers (:mod:`jaxport.adapters.jinja.chat`).
"""
