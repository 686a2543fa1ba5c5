// The parts of three.js that torchrl_render/replay/js/*.js use (tree-shaken by esbuild).
export {
  AmbientLight, BoxGeometry, BufferAttribute, BufferGeometry, CapsuleGeometry, Color, ColorManagement,
  CylinderGeometry, DataTexture, DirectionalLight, Group, LinearMipmapLinearFilter, LinearSRGBColorSpace, Mesh,
  MeshPhongMaterial, NearestFilter, PerspectiveCamera, PlaneGeometry, PointLight, RepeatWrapping, RGBAFormat,
  Scene, SphereGeometry, SpotLight, Vector3, WebGLRenderer,
} from 'three';
export { OrbitControls } from 'three/examples/jsm/controls/OrbitControls.js';
