"""The Thrift endpoint: Hive's ``ThriftHiveMetastore`` service (the generated processor from
hmsclient) over plain sockets with the binary protocol, as Hive 2's client speaks it by default
(no SASL, no framing), one thread per connection.

thrift's own ``TThreadedServer`` cannot be stopped (a closed socket makes its accept loop spin),
so the accept loop is this module's.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from hmsclient.genthrift.hive_metastore import ThriftHiveMetastore, ttypes
from sqlalchemy.engine import Engine
from thrift.protocol import TBinaryProtocol
from thrift.protocol.TProtocol import TProtocolException
from thrift.transport import TSocket, TTransport

from hudi_md.metastore_server.hms.handler import HmsHandler

log = logging.getLogger(__name__)

# Items in one list or map of a request (table names, partition names, values...).
MAX_LIST_ITEMS = 100_000
# Open connections (a thread each; Hive clients keep theirs open): past this, new ones are closed.
MAX_CONNECTIONS = 128


class _Calls:
    """The handler as the processor calls it: each call's name logged (``--log-level debug``
    shows which calls a client makes), and a NoSuchObjectException the call does not declare
    answered as a MetaException (the processor would turn it into an anonymous internal error)."""

    def __init__(self, handler: HmsHandler) -> None:
        self.handler = handler

    def __getattr__(self, call: str) -> Any:
        log.debug("Hive metastore call: %s", call)
        fn = getattr(self.handler, call)
        result = getattr(ThriftHiveMetastore, f"{call}_result", None)
        declared = {s[3][0] for s in getattr(result, "thrift_spec", None) or () if s and s[2] != "success"}
        if ttypes.NoSuchObjectException in declared or ttypes.MetaException not in declared:
            return fn

        def call_with_meta(*args: Any) -> Any:
            try:
                return fn(*args)
            except ttypes.NoSuchObjectException as e:
                raise ttypes.MetaException(message=e.message) from None

        return call_with_meta


class HmsServer:
    """The Hive metastore API on ``host:port`` (port 0: a free one, then :attr:`port`)."""

    def __init__(
        self,
        engine: Engine,
        host: str = "127.0.0.1",
        port: int = 9083,
        metastore_url: str | None = None,
        max_message_bytes: int = 16 * 1024 * 1024,
    ) -> None:
        self.engine = engine
        self.processor = ThriftHiveMetastore.Processor(_Calls(HmsHandler(engine, metastore_url)))
        self.socket = TSocket.TServerSocket(host=host, port=port)
        self.host = host
        self.port = port
        self.transports = TTransport.TBufferedTransportFactory()
        # A string or list length read off the wire is checked before anything is allocated.
        self.protocols = TBinaryProtocol.TBinaryProtocolAcceleratedFactory(
            string_length_limit=max_message_bytes, container_length_limit=MAX_LIST_ITEMS
        )
        self.stopped = threading.Event()
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.thread: threading.Thread | None = None

    def start(self) -> HmsServer:
        self.socket.listen()
        self.port = self.socket.handle.getsockname()[1]
        self.thread = threading.Thread(target=self._accept, name="hms-accept", daemon=True)
        self.thread.start()
        log.info("Hive metastore API on thrift://%s:%d", self.host, self.port)
        return self

    def stop(self) -> None:
        self.stopped.set()
        self.socket.close()
        if self.thread is not None:
            self.thread.join(timeout=5)

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                client = self.socket.accept()
            except Exception:
                if self.stopped.is_set():
                    return
                log.exception("Hive metastore API: accept failed")
                self.stopped.wait(0.1)
                continue
            if client is None:
                continue
            if not self.slots.acquire(blocking=False):
                log.warning("Hive metastore API: %d connections open, one more refused", MAX_CONNECTIONS)
                client.close()
                continue
            threading.Thread(target=self._serve, args=(client,), name="hms-conn", daemon=True).start()

    def _serve(self, client: TTransport.TTransportBase) -> None:
        itrans = self.transports.getTransport(client)
        otrans = self.transports.getTransport(client)
        iprot = self.protocols.getProtocol(itrans)
        oprot = self.protocols.getProtocol(otrans)
        try:
            while not self.stopped.is_set():
                self.processor.process(iprot, oprot)
        except TTransport.TTransportException:
            pass  # the client closed the connection
        except (OverflowError, TProtocolException) as e:
            # past the limits: the rest of the request is unread, so the connection is dropped
            log.warning("Hive metastore API: request refused, connection closed: %s", e)
        except Exception:
            log.exception("Hive metastore API: a connection failed")
        finally:
            itrans.close()
            otrans.close()
            self.slots.release()
