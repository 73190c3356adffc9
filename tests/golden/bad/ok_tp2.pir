terasim-pir 1
model tiny
layers 1
sequence 16
devices 2
batch 1
shape strategy=- dp=1 pp=1 tp=2 v=1
group tp.d0.s0 0,1
# device 0
op F.s0.m0.t0-16.l0.attn.r0 FWD dev=0 stream=compute stage=0 layers=0-1 part=attn mb=0 rows=1 tokens=0-16 group=tp.d0.s0
op ARF.s0.m0.t0-16.l0.attn.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=0-1 part=attn mb=0 rows=1 tokens=0-16 group=tp.d0.s0 tensor=tpf.l0.attn.m0.t0-16 bytes=2048
op F.s0.m0.t0-16.l0.mlp.r0 FWD dev=0 stream=compute stage=0 layers=0-1 part=mlp mb=0 rows=1 tokens=0-16 group=tp.d0.s0
op ARF.s0.m0.t0-16.l0.mlp.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=0-1 part=mlp mb=0 rows=1 tokens=0-16 group=tp.d0.s0 tensor=tpf.l0.mlp.m0.t0-16 bytes=2048
op B.s0.m0.t0-16.l0.mlp.r0 BWD dev=0 stream=compute stage=0 layers=0-1 part=mlp mb=0 rows=1 tokens=0-16 group=tp.d0.s0
op ARB.s0.m0.t0-16.l0.mlp.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=0-1 part=mlp mb=0 rows=1 tokens=0-16 group=tp.d0.s0 tensor=tpb.l0.mlp.m0.t0-16 bytes=2048
op B.s0.m0.t0-16.l0.attn.r0 BWD dev=0 stream=compute stage=0 layers=0-1 part=attn mb=0 rows=1 tokens=0-16 group=tp.d0.s0
op ARB.s0.m0.t0-16.l0.attn.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=0-1 part=attn mb=0 rows=1 tokens=0-16 group=tp.d0.s0 tensor=tpb.l0.attn.m0.t0-16 bytes=2048
op OPT.s0.d0.r0 OPTIMIZER dev=0 stream=compute stage=0 layers=0-1
# device 1
op F.s0.m0.t0-16.l0.attn.r1 FWD dev=1 stream=compute stage=0 layers=0-1 part=attn mb=0 rows=1 tokens=0-16 group=tp.d0.s0
op ARF.s0.m0.t0-16.l0.attn.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=0-1 part=attn mb=0 rows=1 tokens=0-16 group=tp.d0.s0 tensor=tpf.l0.attn.m0.t0-16 bytes=2048
op F.s0.m0.t0-16.l0.mlp.r1 FWD dev=1 stream=compute stage=0 layers=0-1 part=mlp mb=0 rows=1 tokens=0-16 group=tp.d0.s0
op ARF.s0.m0.t0-16.l0.mlp.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=0-1 part=mlp mb=0 rows=1 tokens=0-16 group=tp.d0.s0 tensor=tpf.l0.mlp.m0.t0-16 bytes=2048
op B.s0.m0.t0-16.l0.mlp.r1 BWD dev=1 stream=compute stage=0 layers=0-1 part=mlp mb=0 rows=1 tokens=0-16 group=tp.d0.s0
op ARB.s0.m0.t0-16.l0.mlp.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=0-1 part=mlp mb=0 rows=1 tokens=0-16 group=tp.d0.s0 tensor=tpb.l0.mlp.m0.t0-16 bytes=2048
op B.s0.m0.t0-16.l0.attn.r1 BWD dev=1 stream=compute stage=0 layers=0-1 part=attn mb=0 rows=1 tokens=0-16 group=tp.d0.s0
op ARB.s0.m0.t0-16.l0.attn.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=0-1 part=attn mb=0 rows=1 tokens=0-16 group=tp.d0.s0 tensor=tpb.l0.attn.m0.t0-16 bytes=2048
op OPT.s0.d0.r1 OPTIMIZER dev=1 stream=compute stage=0 layers=0-1
