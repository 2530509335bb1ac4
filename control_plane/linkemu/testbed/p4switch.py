"""BMv2 simple_switch_grpc as a Mininet switch."""

from mininet.log import info
from mininet.node import Switch

from .bmv2 import SimpleSwitchGrpc
from .veth import quiet_interface


class LinkemuSwitch(Switch):
    """Runs simple_switch_grpc on this switch's interfaces, port N on ethN,
    pinned to core `cpu` (SimpleSwitchGrpc's default when None).

    The process is a child of the launcher and is stopped by its PID.
    """

    def __init__(self, name, grpc_port=9559, mtu=1500, thrift_port=None, cpu=None, **params):
        super().__init__(name, **params)
        self.grpc_port = grpc_port
        self.thrift_port = thrift_port
        self.cpu = cpu
        self.mtu = mtu
        self.bmv2 = None

    def ports_by_number(self):
        return {port: intf.name for intf, port in self.ports.items() if intf.name != "lo"}

    def start(self, controllers):
        for name in self.ports_by_number().values():
            quiet_interface(name, self.mtu)
        self.bmv2 = SimpleSwitchGrpc(self.ports_by_number(), grpc_port=self.grpc_port,
                                     log_path=f"/tmp/linkemu-{self.name}.log", cpu=self.cpu,
                                     thrift_port=self.thrift_port)
        self.bmv2.start()
        info(f"*** {self.name}: simple_switch_grpc pid {self.bmv2.pid} on "
             f"{self.bmv2.grpc_address}, Thrift on 127.0.0.1:{self.bmv2.thrift_port}\n")

    def stop(self, deleteIntfs=True):
        if self.bmv2 is not None:
            self.bmv2.stop()
            self.bmv2 = None
        super().stop(deleteIntfs)
